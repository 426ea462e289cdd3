//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/velero-async/velero-plugin-for-aws/internal/testkit/process"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// proc is one process started by the rig.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  *os.File
	done chan struct{}
	err  error
	// stopped is set when the rig itself ended the process.
	stopped bool
}

// rig holds every component of one end-to-end run.
type rig struct {
	t         *testing.T
	repoRoot  string
	dir       string // work dir
	logDir    string
	binDir    string // built tools
	pluginDir string
	home      string

	mu    sync.Mutex
	procs []*proc
	seq   map[string]int

	// cluster is the cluster the rig's steps act on: the source cluster, or in the
	// disaster-recovery drill the recovery cluster (use).
	*cluster

	s3URL  string
	ec2URL string

	// accounts are the simulator's accounts: A (its default account), B and C (the vault).
	accounts []awsAccount
	// creds are the credential Secrets in namespace velero, by name.
	creds map[string]credSecret

	pluginErr error // set when this repository's plugin could not be built

	samples describeSamples // describe outputs for the README's samples
}

// cluster is one Kubernetes cluster of the rig (etcd, kube-apiserver) with its Velero server.
type cluster struct {
	// name prefixes the logs of its processes ("" for the source cluster).
	name string
	// dir holds its etcd data, certificates, kubeconfig and the Velero server's TMPDIR.
	dir string
	// region is where it runs (its Velero server's AWS_REGION).
	region string

	kubeconfig string
	// operatorKubeconfig is operatorUser's: a person granted only what RBAC bindings give.
	operatorKubeconfig string
	restConfig         *rest.Config
	c                  client.WithWatch
	cs                 *kubernetes.Clientset

	serverArgs []string
	serverEnv  []string
	server     *proc
}

// use makes c the cluster the rig's steps act on.
func (r *rig) use(c *cluster) { r.cluster = c }

// procName is the name of one of the current cluster's processes.
func (r *rig) procName(base string) string {
	if r.cluster.name == "" {
		return base
	}
	return r.cluster.name + "-" + base
}

func (r *rig) step(format string, args ...any) {
	r.t.Helper()
	r.t.Logf("%s STEP  "+format, append([]any{time.Now().UTC().Format("15:04:05")}, args...)...)
}

func (r *rig) saw(format string, args ...any) {
	r.t.Helper()
	r.t.Logf("%s   saw "+format, append([]any{time.Now().UTC().Format("15:04:05")}, args...)...)
}

func newRig(t *testing.T) *rig {
	_, file, _, _ := runtime.Caller(0)
	here := filepath.Dir(file)
	r := &rig{t: t, repoRoot: filepath.Clean(filepath.Join(here, "..", "..", "..")), seq: map[string]int{}}
	dir, err := os.MkdirTemp(os.Getenv("E2E_WORKDIR"), "velero-async-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	r.dir = dir
	r.cluster = &cluster{dir: dir, region: srcRegion}
	r.logDir = filepath.Join(dir, "logs")
	r.pluginDir = filepath.Join(dir, "plugins")
	r.home = filepath.Join(dir, "home")
	for _, d := range []string{r.logDir, r.pluginDir, r.home, filepath.Join(dir, "bin"), filepath.Join(dir, "tmp")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	r.newCredentials()
	t.Cleanup(r.cleanup)
	// An interrupted run (Ctrl-C, CI timeout) still stops every process it started.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		s, ok := <-sig
		if !ok {
			return
		}
		fmt.Fprintf(os.Stderr, "e2e: got %v, stopping every process of the rig (logs in %s)\n", s, r.logDir)
		r.mu.Lock()
		procs := append([]*proc(nil), r.procs...)
		r.mu.Unlock()
		for i := len(procs) - 1; i >= 0; i-- {
			_ = syscall.Kill(-procs[i].cmd.Process.Pid, syscall.SIGKILL)
		}
		os.Exit(2)
	}()
	t.Cleanup(func() { signal.Stop(sig); close(sig) })
	r.step("work dir %s, logs in %s", dir, r.logDir)
	return r
}

func (r *rig) cleanup() {
	r.mu.Lock()
	procs := append([]*proc(nil), r.procs...)
	r.mu.Unlock()
	var died []*proc
	for _, p := range procs {
		select {
		case <-p.done:
			if !p.stopped {
				died = append(died, p)
			}
		default:
		}
	}
	for i := len(procs) - 1; i >= 0; i-- {
		r.stop(procs[i])
	}
	for _, p := range died {
		r.t.Logf("---- %s exited before the end (%v); last lines of %s ----\n%s", p.name, p.err, p.log.Name(), process.LogTail(p.log.Name(), 25))
	}
	r.t.Logf("all processes stopped; logs of every component: %s", r.logDir)
	if os.Getenv("E2E_KEEP") == "" {
		// tmp is the Velero server's TMPDIR, holding the credentials files Velero and the plugin
		// write from the Secrets; ec2sim.json holds the accounts' secret keys.
		for _, d := range []string{"etcd", "plugins", "bin", "home", "tmp", "ec2sim.json", recoveryName, lossRecoveryName} {
			os.RemoveAll(filepath.Join(r.dir, d))
		}
	}
}

// logFile opens a fresh log file for name (name.log, name-2.log, ...).
func (r *rig) logFile(name string) *os.File {
	r.mu.Lock()
	r.seq[name]++
	n := r.seq[name]
	r.mu.Unlock()
	fn := name + ".log"
	if n > 1 {
		fn = fmt.Sprintf("%s-%d.log", name, n)
	}
	f, err := os.Create(filepath.Join(r.logDir, fn))
	if err != nil {
		r.t.Fatal(err)
	}
	return f
}

// start runs a long-lived process in its own process group with output to its log. If firstLine is
// non-nil, the first stdout line is sent to it (and also logged).
func (r *rig) start(name string, env []string, firstLine chan<- string, bin string, args ...string) *proc {
	r.t.Helper()
	f := r.logFile(name)
	fmt.Fprintf(f, "# %s %s\n", bin, strings.Join(args, " "))
	cmd := exec.Command(bin, args...)
	cmd.Env = append(inheritedEnv(), env...)
	cmd.Stderr = f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stdout io.ReadCloser
	if firstLine != nil {
		var err error
		if stdout, err = cmd.StdoutPipe(); err != nil {
			r.t.Fatal(err)
		}
	} else {
		cmd.Stdout = f
	}
	if err := cmd.Start(); err != nil {
		r.t.Fatalf("start %s: %v", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: f, done: make(chan struct{})}
	r.mu.Lock()
	r.procs = append(r.procs, p)
	r.mu.Unlock()
	if stdout != nil {
		go func() {
			sc := bufio.NewScanner(stdout)
			first := true
			for sc.Scan() {
				if first {
					firstLine <- sc.Text()
					first = false
				}
				fmt.Fprintln(f, sc.Text())
			}
		}()
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	r.saw("%s started, pid %d", name, cmd.Process.Pid)
	return p
}

// stop ends p as Kubernetes ends a container: SIGTERM to the process alone, SIGKILL after 15 s,
// then SIGKILL to what is left of its group (the kernel ends a PID namespace's other processes
// when its first one exits). The Velero server's plugin processes are its children: a SIGTERM
// to the whole group killed them under a reconcile's Progress calls, which Velero then records
// failed, and the restarted server finalized the backup Completed with every operation Failed.
func (r *rig) stop(p *proc) {
	p.stopped = true
	select {
	case <-p.done:
		return
	default:
	}
	pid := p.cmd.Process.Pid
	_ = syscall.Kill(pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		<-p.done
	}
	// Children that outlived their parent in the group.
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	r.t.Logf("stopped %s (pid %d): %v", p.name, pid, p.err)
}

// run runs a short command and returns its combined output, logging it to logs/cli.log.
func (r *rig) run(env []string, bin string, args ...string) (string, error) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(inheritedEnv(), env...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	err := cmd.Run()
	f, ferr := os.OpenFile(filepath.Join(r.logDir, "cli.log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if ferr == nil {
		fmt.Fprintf(f, "\n### %s $ %s %s (err=%v)\n%s", time.Now().UTC().Format(time.RFC3339), filepath.Base(bin), strings.Join(args, " "), err, out.String())
		f.Close()
	}
	return out.String(), err
}

// velero runs the Velero CLI against the rig's cluster.
func (r *rig) velero(args ...string) (string, error) {
	return r.run(r.cliEnv(), filepath.Join(r.binDir, "velero"), append(args, "--namespace", "velero")...)
}

func (r *rig) mustVelero(args ...string) string {
	r.t.Helper()
	out, err := r.velero(args...)
	if err != nil {
		r.t.Fatalf("velero %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func (r *rig) cliEnv() []string {
	return []string{"KUBECONFIG=" + r.kubeconfig, "HOME=" + r.home, "VELERO_NAMESPACE=velero"}
}

// inheritedEnv is the test's environment less every AWS_* variable: no process of the rig gets
// AWS credentials, a profile or endpoints from the machine it runs on, only what the rig gives it.
func inheritedEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") {
			env = append(env, kv)
		}
	}
	return env
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func waitFor(t *testing.T, what string, timeout time.Duration, p *proc, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if p != nil {
			select {
			case <-p.done:
				t.Fatalf("%s exited while waiting for %s: %v\n%s", p.name, what, p.err, process.LogTail(p.log.Name(), 30))
			default:
			}
		}
		if ok() {
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("timed out after %s waiting for %s", timeout, what)
}

func readLine(t *testing.T, p *proc, ch <-chan string, timeout time.Duration) string {
	t.Helper()
	select {
	case l := <-ch:
		return strings.TrimSpace(l)
	case <-p.done:
		t.Fatalf("%s exited: %v\n%s", p.name, p.err, process.LogTail(p.log.Name(), 30))
	case <-time.After(timeout):
		t.Fatalf("%s printed no URL within %s", p.name, timeout)
	}
	return ""
}

// buildTools finds or builds the rig's binaries and this repository's plugin and simulator.
func (r *rig) buildTools() {
	r.t.Helper()
	if d := os.Getenv("E2E_BIN"); d != "" {
		r.binDir = d
		r.step("using prebuilt tools in E2E_BIN=%s", d)
	} else {
		r.step("building tools (kube-apiserver, kubectl, velero %s, fakes3, upstream velero-plugin-for-aws) with build-tools.sh", veleroVersion())
		start := time.Now()
		cmd := exec.Command(filepath.Join(r.repoRoot, "internal", "testkit", "e2e", "build-tools.sh"))
		// build-tools.sh picks the Velero version (and the upstream AWS plugin paired with it) from
		// E2E_VELERO_VERSION, as the test does.
		cmd.Env = append(os.Environ(), "E2E_VELERO_VERSION="+veleroVersion())
		f := r.logFile("build-tools")
		cmd.Stderr = io.MultiWriter(f, os.Stderr)
		out, err := cmd.Output()
		f.Close()
		if err != nil {
			r.t.Fatalf("build-tools.sh: %v (see %s)", err, f.Name())
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		r.binDir = lines[len(lines)-1]
		r.saw("tools in %s after %s", r.binDir, time.Since(start).Round(time.Second))
	}
	for _, b := range []string{"kube-apiserver", "kubectl", "velero", "fakes3", "velero-plugin-for-aws"} {
		if _, err := os.Stat(filepath.Join(r.binDir, b)); err != nil {
			r.t.Fatalf("tool missing: %v", err)
		}
	}
	// The velero binary must be the version the run is for (E2E_BIN may hold another).
	vcmd := exec.Command(filepath.Join(r.binDir, "velero"), "version", "--client-only")
	vcmd.Env = []string{"HOME=" + r.home}
	if out, err := vcmd.CombinedOutput(); err != nil {
		r.t.Fatalf("velero version --client-only: %v\n%s", err, out)
	} else if !strings.Contains(strings.Join(strings.Fields(string(out)), " ")+" ", "Version: "+veleroVersion()+" ") {
		r.t.Fatalf("velero in %s is not %s (set E2E_VELERO_VERSION to the version of E2E_BIN's velero):\n%s", r.binDir, veleroVersion(), out)
	} else {
		r.saw("velero %s (velero version --client-only)", veleroVersion())
	}
	r.step("building this plugin (go build -o plugins/velero-plugin-for-aws-async .) and the EC2 simulator")
	start := time.Now()
	for _, b := range [][]string{
		{filepath.Join(r.pluginDir, "velero-plugin-for-aws-async"), "."},
		{filepath.Join(r.dir, "bin", "ec2sim"), "./internal/testkit/cmd/ec2sim"},
	} {
		cmd := exec.Command("go", "build", "-o", b[0], b[1])
		cmd.Dir = r.repoRoot
		if out, err := cmd.CombinedOutput(); err != nil {
			if b[1] == "." {
				// Without our plugin the rig still runs; the volume steps then fail.
				r.pluginErr = fmt.Errorf("go build -o %s .: %v\n%s", b[0], err, out)
				r.t.Logf("WARNING: %v", r.pluginErr)
				continue
			}
			r.t.Fatalf("go build %s: %v\n%s", b[1], err, out)
		}
	}
	// The upstream plugin serves the BackupStorageLocation; copy it next to ours.
	src, err := os.ReadFile(filepath.Join(r.binDir, "velero-plugin-for-aws"))
	if err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.pluginDir, "velero-plugin-for-aws"), src, 0o755); err != nil {
		r.t.Fatal(err)
	}
	r.saw("plugin dir %s ready after %s", r.pluginDir, time.Since(start).Round(time.Second))
}

// startCluster starts etcd and kube-apiserver and connects clients.
func (r *rig) startCluster() {
	t := r.t
	t.Helper()
	r.step("starting etcd (Debian etcd-server) on free loopback ports")
	etcdBin, err := exec.LookPath("etcd")
	if err != nil {
		t.Fatal("etcd not found: apt-get install -y etcd-server")
	}
	clientPort, peerPort := freePort(t), freePort(t)
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", clientPort)
	etcd := r.start(r.procName("etcd"), []string{"ETCD_UNSUPPORTED_ARCH="}, nil, etcdBin,
		"--data-dir", filepath.Join(r.cluster.dir, "etcd"),
		"--name", "e2e",
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", peerPort),
		"--initial-advertise-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", peerPort),
		"--initial-cluster", fmt.Sprintf("e2e=http://127.0.0.1:%d", peerPort))
	waitFor(t, "etcd /health", 30*time.Second, etcd, func() bool {
		resp, err := http.Get(etcdURL + "/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	r.saw("etcd healthy at %s", etcdURL)

	r.step("generating service-account key and admin token; starting kube-apiserver")
	certDir := filepath.Join(r.cluster.dir, "pki")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		t.Fatal(err)
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(certDir, "sa.key"), pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}))
	writeFile(t, filepath.Join(certDir, "sa.pub"), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}))
	tok := make([]byte, 16)
	_, _ = rand.Read(tok)
	token := hex.EncodeToString(tok)
	_, _ = rand.Read(tok)
	opToken := hex.EncodeToString(tok)
	writeFile(t, filepath.Join(certDir, "tokens.csv"), []byte(token+",admin,admin,system:masters\n"+opToken+","+operatorUser+","+operatorUser+"\n"))

	port := freePort(t)
	api := r.start(r.procName("kube-apiserver"), nil, nil, filepath.Join(r.binDir, "kube-apiserver"),
		"--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(port),
		"--cert-dir="+certDir,
		"--token-auth-file="+filepath.Join(certDir, "tokens.csv"),
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file="+filepath.Join(certDir, "sa.pub"),
		"--service-account-signing-key-file="+filepath.Join(certDir, "sa.key"),
		"--service-cluster-ip-range=10.0.0.0/24",
		"--enable-priority-and-fairness=false",
	)
	server := fmt.Sprintf("https://127.0.0.1:%d", port)
	r.kubeconfig = filepath.Join(r.cluster.dir, "kubeconfig")
	writeFile(t, r.kubeconfig, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster:
    server: %s
    insecure-skip-tls-verify: true
users:
- name: admin
  user:
    token: %s
contexts:
- name: e2e
  context:
    cluster: e2e
    user: admin
current-context: e2e
`, server, token)))
	r.operatorKubeconfig = filepath.Join(r.cluster.dir, "kubeconfig-"+operatorUser)
	writeFile(t, r.operatorKubeconfig, []byte(fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: e2e\n  cluster: {server: %s, insecure-skip-tls-verify: true}\n"+
		"users:\n- name: %s\n  user: {token: %s}\ncontexts:\n- name: e2e\n  context: {cluster: e2e, user: %s}\ncurrent-context: e2e\n", server, operatorUser, opToken, operatorUser)))
	cfg, err := clientcmd.BuildConfigFromFlags("", r.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 100, 200
	r.restConfig = cfg
	if r.cs, err = kubernetes.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	waitFor(t, "kube-apiserver /readyz", 2*time.Minute, api, func() bool {
		body, err := r.cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(context.Background())
		return err == nil && strings.TrimSpace(string(body)) == "ok"
	})
	r.saw("kube-apiserver ready at %s after %s", server, time.Since(start).Round(time.Second))

	scheme := k8sruntime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := velerov1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if r.c, err = client.NewWithWatch(cfg, client.Options{Scheme: scheme}); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
