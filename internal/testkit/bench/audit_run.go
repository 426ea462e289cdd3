package bench

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/velero-async/velero-plugin-for-aws/internal/audit"
	"github.com/velero-async/velero-plugin-for-aws/internal/ec2api"
	"github.com/velero-async/velero-plugin-for-aws/internal/location"
	"github.com/velero-async/velero-plugin-for-aws/internal/model"
	"github.com/velero-async/velero-plugin-for-aws/internal/objectstore"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/ec2sim"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/kubeapi"
	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/rig"
)

// heapInterval is how often the heap is sampled during an audit, for its peak.
const heapInterval = 5 * time.Millisecond

// Heap metrics of runtime/metrics: live is what the last GC marked reachable (exact right
// after runtime.GC); objects counts live and not yet collected objects, the heap in use.
const (
	metricHeapLive    = "/gc/heap/live:bytes"
	metricHeapObjects = "/memory/classes/heap/objects:bytes"
)

// AuditResult is one audit of the scenario's world at a backup count.
type AuditResult struct {
	// Backups is the schedule's backup count; Places what the world holds in each place.
	Backups int          `json:"backups"`
	Places  []auditPlace `json:"places"`
	// ReadSeconds is Auditor.Read's wall time, DecideSeconds audit.Decide's, TotalSeconds both;
	// ReadCPUSeconds and DecideCPUSeconds the process's CPU time meanwhile (user and system,
	// every core; the simulator's and the GC's included).
	ReadSeconds      Seconds `json:"readSeconds"`
	DecideSeconds    Seconds `json:"decideSeconds"`
	TotalSeconds     Seconds `json:"totalSeconds"`
	ReadCPUSeconds   Seconds `json:"readCpuSeconds"`
	DecideCPUSeconds Seconds `json:"decideCpuSeconds"`
	// LoadAverage is the machine's 1-minute load average as the audit ended: wall times on a
	// machine busy with other work are longer than on an idle one, CPU times not.
	LoadAverage float64 `json:"loadAverage"`
	// IdleSeconds estimates Read and Decide on idle cores, whatever the load: their CPU time
	// on every core, one core after another, plus the time the simulator held each answer back
	// (Audit.Latency).
	IdleSeconds Seconds `json:"idleSeconds"`
	// SimulatorSeconds is the time the simulator took to answer the audit's EC2 requests (into
	// a buffer, before sending); ResponseBytes the size of its answers.
	SimulatorSeconds Seconds `json:"simulatorSeconds"`
	ResponseBytes    int64   `json:"ec2ResponseBytes"`
	// Calls counts EC2 responses per action (TotalCalls in all); Throttled the
	// RequestLimitExceeded ones among them.
	Calls      map[string]int `json:"ec2Calls"`
	TotalCalls int            `json:"ec2CallsTotal"`
	Throttled  int            `json:"throttled"`
	// Bound is the paging bound per action (BoundTotal in all); CallRatio is TotalCalls /
	// BoundTotal.
	Bound      map[string]int `json:"pagingBound"`
	BoundTotal int            `json:"pagingBoundTotal"`
	CallRatio  float64        `json:"callRatio"`
	// KubeRequests counts the Kubernetes API requests, "get KIND" or "list KIND"; StoreReads
	// the object-store reads, by the port's method.
	KubeRequests map[string]int `json:"kubeRequests"`
	StoreReads   map[string]int `json:"objectStoreReads"`
	// ReadHeapBytes and DecideHeapBytes are the live heap right after Read (the World) and
	// after Decide (the World and the Report), after a forced GC; PeakHeapBytes the most heap
	// in use sampled during both (garbage not yet collected included, the simulator's answers'
	// among it); each less the live heap before Read (the simulator, the fake cluster and
	// storage location, which the audit reads). The simulator's heap paces the collector too,
	// which lets more garbage pile up than in the command's own process: the peak is an upper
	// bound of the command's.
	ReadHeapBytes   int64 `json:"readHeapBytes"`
	DecideHeapBytes int64 `json:"decideHeapBytes"`
	PeakHeapBytes   int64 `json:"peakHeapBytes"`
	// Verdicts are the report's, counted; Differences where they differ from the world's.
	Verdicts    AuditVerdicts `json:"verdicts"`
	Differences []string      `json:"differences,omitempty"`
}

// HeapPerBackup is DecideHeapBytes per backup.
func (r AuditResult) HeapPerBackup() float64 { return float64(r.DecideHeapBytes) / float64(r.Backups) }

// AuditResults are the audits of the scenario, smallest world first.
type AuditResults []AuditResult

func (rs AuditResults) summary() string {
	lines := make([]string, len(rs))
	for i, r := range rs {
		lines[i] = fmt.Sprintf("%d backups: read %.1fs (CPU %.1fs), decide %.1fs, %d EC2 calls (bound %d), %d Kubernetes requests, %d object-store reads, %.0f MiB after Decide",
			r.Backups, r.ReadSeconds, r.ReadCPUSeconds, r.DecideSeconds, r.TotalCalls, r.BoundTotal, total(r.KubeRequests), total(r.StoreReads), mib(r.DecideHeapBytes))
	}
	return strings.Join(lines, "; ")
}

// RunAudit audits the scenario's world at each of its sizes.
func RunAudit(ctx context.Context, a Audit) (AuditResults, error) {
	var out AuditResults
	for _, n := range a.sizes() {
		res, err := a.runAt(ctx, n)
		if err != nil {
			return nil, fmt.Errorf("audit of %d backups: %w", n, err)
		}
		out = append(out, res)
	}
	return out, nil
}

// runAt builds the world of n backups, serves its simulator over HTTP, and audits it as the
// audit command does (credentials from the location's Secrets, EC2 clients from the plugin's
// own factory, pointed at the simulator by AWS_ENDPOINT_URL_EC2), but for the cluster (a fake
// client) and the storage location (a fake of the audit's Stores port, which the command
// serves with the location's object-store plugin).
func (a Audit) runAt(ctx context.Context, n int) (AuditResult, error) {
	w := a.world(n, time.Now())
	served, err := a.serve(ctx, w)
	if err != nil {
		return AuditResult{}, err
	}
	defer served.srv.Close()
	defer setEnv(map[string]string{"AWS_ENDPOINT_URL_EC2": served.srv.URL, "AWS_EC2_METADATA_DISABLED": "true"})()
	tmp, err := os.MkdirTemp("", "velero-async-bench-audit-")
	if err != nil {
		return AuditResult{}, err
	}
	defer os.RemoveAll(tmp)
	kube := &countingReader{Reader: fake.NewClientBuilder().WithScheme(kubeapi.Scheme()).WithObjects(w.objects...).Build(), calls: map[string]int{}}
	bucket := &auditBucket{listing: w.listing, records: w.records, reads: map[string]int{}}
	w.objects, w.listing, w.records = nil, nil, nil // the fakes hold them
	auditor := &audit.Auditor{
		Kube: kube, Stores: bucket, Clients: ec2api.NewFactory(), Clock: clock.RealClock{},
		Resolver:  location.New(location.WithReader(kube), location.WithNamespace(auditNamespace), location.WithTempDir(tmp)),
		Namespace: auditNamespace, Provider: location.DefaultProvider,
	}
	res, err := measure(ctx, auditor)
	if err != nil {
		return AuditResult{}, err
	}
	res.Backups, res.Places, res.Bound = n, w.places, pagingBound(w.places)
	res.SimulatorSeconds, res.ResponseBytes = seconds(served.answers.took), served.answers.bytes
	res.KubeRequests, res.StoreReads = kube.calls, bucket.reads
	st := callsSince(served.before, served.sim.Stats())
	res.Calls, res.Throttled = rig.CallsByAction(st), rig.CallsByOutcome(st)[rig.Throttled]
	res.TotalCalls, res.BoundTotal = total(res.Calls), total(res.Bound)
	res.CallRatio = float64(res.TotalCalls) / float64(res.BoundTotal)
	res.IdleSeconds = res.ReadCPUSeconds + res.DecideCPUSeconds + seconds(time.Duration(res.TotalCalls)*longest(a.Latency))
	res.Differences = w.want.differences(res.Verdicts)
	return res, nil
}

// auditEC2 is the simulator of an audit's world, served over HTTP, with its counts before the
// audit.
type auditEC2 struct {
	sim     *ec2sim.Simulator
	answers *timedHandler
	srv     *httptest.Server
	before  ec2sim.Stats
}

// serve seeds w into a new simulator at the scenario's rates and serves it. The simulator
// answers each place's pages once before the audit: it keeps each snapshot's answer from then
// on, its memory, not the World's. Those calls are not the audit's, and the audit starts with
// the request bucket full again.
func (a Audit) serve(ctx context.Context, w *auditWorld) (*auditEC2, error) {
	cfg := ec2sim.Config{ThrottleScale: a.ThrottleScale, Unthrottled: a.ThrottleScale <= 0, Faults: ec2sim.Faults{Latency: a.Latency}}
	for _, id := range []string{auditSourceAccount, auditVaultAccount} {
		cfg.Accounts = append(cfg.Accounts, ec2sim.Account{ID: id, AccessKeys: []ec2sim.AccessKey{auditKeys[id]}})
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	e := &auditEC2{sim: ec2sim.New(cfg)}
	w.seed(e.sim)
	e.answers = &timedHandler{h: e.sim}
	e.srv = httptest.NewServer(e.answers)
	err := w.describeAll(ctx, e.srv.URL)
	if err == nil {
		err = sleep(ctx, newBucket(describeBurst, describeRate, a.ThrottleScale).refillTime())
	}
	if err != nil {
		e.srv.Close()
		return nil, fmt.Errorf("describing the snapshots before the audit: %w", err)
	}
	e.before = e.sim.Stats()
	e.answers.reset()
	return e, nil
}

// measure runs the auditor's Read, then Decide on what it read, and measures both: wall and CPU
// time, and the heap.
func measure(ctx context.Context, auditor *audit.Auditor) (AuditResult, error) {
	baseline := liveHeap()
	peak := sampleHeap(heapInterval)
	start, cpu := time.Now(), cpuTime()
	world, err := auditor.Read(ctx, "")
	read, readCPU := time.Since(start), cpuTime()-cpu
	if err != nil {
		peak.stop()
		return AuditResult{}, err
	}
	readHeap := liveHeap() - baseline
	start, cpu = time.Now(), cpuTime()
	rep := audit.Decide(world, audit.DefaultOptions())
	decide, decideCPU := time.Since(start), cpuTime()-cpu
	peakHeap := peak.stop() - baseline
	decideHeap := liveHeap() - baseline
	runtime.KeepAlive(world)
	return AuditResult{ReadSeconds: seconds(read), DecideSeconds: seconds(decide), TotalSeconds: seconds(read + decide),
		ReadCPUSeconds: seconds(readCPU), DecideCPUSeconds: seconds(decideCPU), LoadAverage: loadAverage(),
		ReadHeapBytes: readHeap, DecideHeapBytes: decideHeap, PeakHeapBytes: peakHeap, Verdicts: verdictsOf(rep)}, nil
}

// describeAll pages through the snapshots of every place of the world on the simulator at url,
// as the audit does.
func (w *auditWorld) describeAll(ctx context.Context, url string) error {
	for _, p := range w.places {
		k := auditKeys[p.Account]
		c := ec2.New(ec2.Options{Region: p.Region, BaseEndpoint: aws.String(url),
			Credentials: credentials.NewStaticCredentialsProvider(k.AccessKeyID, k.SecretAccessKey, "")})
		in := &ec2.DescribeSnapshotsInput{OwnerIds: []string{"self"}, MaxResults: aws.Int32(describeMaxResults),
			Filters: []types.Filter{{Name: aws.String("tag-key"), Values: []string{model.TagBackup}}}}
		for pages := ec2.NewDescribeSnapshotsPaginator(c, in); pages.HasMorePages(); {
			if _, err := pages.NextPage(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

// total sums counts.
func total(counts map[string]int) int {
	n := 0
	for _, c := range counts {
		n += c
	}
	return n
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// setEnv sets environment variables and returns what puts them back as they were.
func setEnv(vars map[string]string) (restore func()) {
	old := map[string]*string{}
	for k, v := range vars {
		if was, ok := os.LookupEnv(k); ok {
			old[k] = &was
		} else {
			old[k] = nil
		}
		_ = os.Setenv(k, v)
	}
	return func() {
		for k, v := range old {
			if v == nil {
				_ = os.Unsetenv(k)
			} else {
				_ = os.Setenv(k, *v)
			}
		}
	}
}

// timedHandler serves h's answers, timing how long h takes to make each into a buffer (not
// how long the client takes to read it) and counting their bytes.
type timedHandler struct {
	h     http.Handler
	mu    sync.Mutex
	took  time.Duration
	bytes int64
}

// reset forgets the answers so far.
func (t *timedHandler) reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.took, t.bytes = 0, 0
}

func (t *timedHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := httptest.NewRecorder()
	start := time.Now()
	t.h.ServeHTTP(rec, r)
	took := time.Since(start)
	t.mu.Lock()
	t.took += took
	t.bytes += int64(rec.Body.Len())
	t.mu.Unlock()
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	_, _ = w.Write(rec.Body.Bytes())
}

// countingReader counts the Kubernetes API requests made through it, by verb and kind.
type countingReader struct {
	client.Reader
	mu    sync.Mutex
	calls map[string]int
}

func (c *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.count("get", obj)
	return c.Reader.Get(ctx, key, obj, opts...)
}

func (c *countingReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	c.count("list", list)
	return c.Reader.List(ctx, list, opts...)
}

func (c *countingReader) count(verb string, obj any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls[verb+" "+reflect.TypeOf(obj).Elem().Name()]++
}

// auditBucket is the storage location's object storage, as the audit's Stores port reads it:
// the backups it holds (one listing), and each backup's record of its native snapshots
// (decoded afresh at each read, as the object-store reader does). It counts the reads.
type auditBucket struct {
	listing []string
	records map[string][]audit.RecordedSnapshot
	mu      sync.Mutex
	reads   map[string]int
}

// Backups lists the backups the storage location holds.
func (b *auditBucket) Backups(_ context.Context, bsl *velerov1.BackupStorageLocation) ([]string, error) {
	b.count("Backups")
	if bsl.Name != auditStorage {
		return []string{}, nil
	}
	return slices.Clone(b.listing), nil
}

// VolumeSnapshots returns a backup's record in the storage location.
func (b *auditBucket) VolumeSnapshots(_ context.Context, bsl *velerov1.BackupStorageLocation, backup string) ([]audit.RecordedSnapshot, error) {
	b.count("VolumeSnapshots")
	rec, ok := b.records[backup]
	if !ok || bsl.Name != auditStorage {
		return nil, objectstore.ErrNoRecord
	}
	return slices.Clone(rec), nil
}

func (b *auditBucket) count(method string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.reads[method]++
}

// cpuTime is the process's CPU time so far, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loadAverage is the machine's 1-minute load average (Linux's /proc/loadavg); 0 when unknown.
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(fields[0], 64)
	return v
}

// liveHeap is the live heap after a forced GC.
func liveHeap() int64 {
	runtime.GC()
	return heapMetric(metricHeapLive)
}

func heapMetric(name string) int64 {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// heapSampler samples the heap in use until stopped.
type heapSampler struct {
	done chan struct{}
	peak chan int64
}

// sampleHeap starts sampling the heap in use every interval.
func sampleHeap(interval time.Duration) heapSampler {
	h := heapSampler{done: make(chan struct{}), peak: make(chan int64, 1)}
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		peak := heapMetric(metricHeapObjects)
		for {
			select {
			case <-h.done:
				h.peak <- max(peak, heapMetric(metricHeapObjects))
				return
			case <-t.C:
				peak = max(peak, heapMetric(metricHeapObjects))
			}
		}
	}()
	return h
}

// stop stops the sampling and returns the peak.
func (h heapSampler) stop() int64 {
	close(h.done)
	return <-h.peak
}
