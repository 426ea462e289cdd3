// Package cli is what the plugin binary's commands for people (check, audit, drill) share: their
// common flags and output formats, the steps of their Main around their own work, and the
// Kubernetes and location access they run with.
package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/spf13/pflag"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/velero-async/velero-plugin-for-aws/internal/location"
	"github.com/velero-async/velero-plugin-for-aws/internal/secretfile"
)

// Output formats.
const (
	OutputText = "text"
	OutputJSON = "json"
)

// BinaryName is the plugin binary's name, in usage lines.
const BinaryName = "velero-plugin-for-aws-async"

// Exit statuses every command shares; each command names its own between them for what it found.
const (
	// ExitOK: the command ran and found nothing to act on, or printed its usage (--help).
	ExitOK = 0
	// ExitError: the command could not run.
	ExitError = 2
)

// Command is one command's flag set with the flags every command has.
type Command struct {
	// Name is the command's name, the first argument of the binary, and its messages' prefix.
	Name string
	// Flags holds the common flags; a command adds its own before Run.
	Flags *pflag.FlagSet
	// Kubeconfig, Namespace and Output are the common flags' values once parsed.
	Kubeconfig, Namespace, Output string
	stderr                        io.Writer
}

// New makes the flag set of command name, whose --help prints its usage line (the binary, name
// and operands, e.g. "[flags]"), then about and the flags.
func New(name, operands, about string, stderr io.Writer) *Command {
	c := &Command{Name: name, Flags: pflag.NewFlagSet(name, pflag.ContinueOnError), stderr: stderr}
	c.Flags.SetOutput(stderr)
	c.Flags.StringVar(&c.Kubeconfig, "kubeconfig", "", "kubeconfig file (default: KUBECONFIG, ~/.kube/config, else the in-cluster config)")
	c.Flags.StringVar(&c.Namespace, "namespace", location.Namespace(), "Velero's namespace (VELERO_NAMESPACE when set)")
	c.Flags.StringVar(&c.Output, "output", OutputText, "output format: "+OutputText+" or "+OutputJSON)
	c.Flags.Usage = func() {
		fmt.Fprintf(stderr, "Usage: %s %s %s\n\n%s\n\n", BinaryName, name, operands, about)
		c.Flags.PrintDefaults()
	}
	return c
}

// Report is a command's report: written as text by WriteText, as JSON as it is.
type Report interface {
	WriteText(io.Writer) error
}

// Run is what every command's Main does around its own work: it parses args, refuses the flags
// invalid says are wrong (invalid may be nil), opens the session, runs run with it and writes
// the report run returns in the output format asked for. It returns ExitOK after --help,
// ExitError (the cause on standard error) when a step fails, else the status run returned.
func (c *Command) Run(args []string, stdout io.Writer, invalid func() error, run func(*Session) (Report, int, error)) int {
	if err := c.parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return ExitOK
		}
		return ExitError
	}
	if invalid != nil {
		if err := invalid(); err != nil {
			c.errorf("%v", err)
			return ExitError
		}
	}
	session, err := c.open()
	if err != nil {
		return ExitError
	}
	defer session.Close()
	rep, exit, err := run(session)
	if err != nil {
		c.errorf("%v", err)
		return ExitError
	}
	if c.write(stdout, rep) != nil {
		return ExitError
	}
	return exit
}

// parse parses args: pflag.ErrHelp after --help, an error (already printed) for bad flags,
// stray arguments or an unknown output format.
func (c *Command) parse(args []string) error {
	if err := c.Flags.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return err
		}
		return c.errorf("%v (see %s %s --help)", err, BinaryName, c.Name)
	}
	switch {
	case c.Flags.NArg() > 0:
		return c.errorf("unexpected arguments %q", c.Flags.Args())
	case c.Output != OutputText && c.Output != OutputJSON:
		return c.errorf("--output %q: want %s or %s", c.Output, OutputText, OutputJSON)
	}
	return nil
}

// errorf prints the message, prefixed with the command's name, and returns it as an error.
func (c *Command) errorf(format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	fmt.Fprintf(c.stderr, "%s: %v\n", c.Name, err)
	return err
}

// write writes a report in the output format asked for.
func (c *Command) write(stdout io.Writer, rep Report) error {
	write := rep.WriteText
	if c.Output == OutputJSON {
		write = func(w io.Writer) error { return WriteJSON(w, rep) }
	}
	if err := write(stdout); err != nil {
		return c.errorf("%v", err)
	}
	return nil
}

// Session is a command's access to the cluster: a Kubernetes client, and a location Resolver
// that puts the credentials it resolves in the session's own files, which never touch disk
// where the system allows it (secretfile): on Linux they go with the process however it ends;
// elsewhere they are in a private directory that Close removes (on exit, and after SIGINT or
// SIGTERM, which end the command's context).
type Session struct {
	Kube     client.Client
	Resolver *location.Resolver
	// Log goes to the command's standard error, warnings only.
	Log   *logrus.Logger
	files *secretfile.Files
}

// open opens the command's session, its client naming itself after the binary and the command.
func (c *Command) open() (*Session, error) {
	kube, err := location.NewClient(c.Kubeconfig, BinaryName+"-"+c.Name)
	if err != nil {
		return nil, c.errorf("%v", err)
	}
	log := logrus.New()
	log.Out, log.Level = c.stderr, logrus.WarnLevel
	files := secretfile.New("velero-async-"+c.Name+"-", func(msg string) { log.Warn(msg) })
	return &Session{
		Kube: kube, Log: log, files: files,
		Resolver: location.New(location.WithReader(kube), location.WithNamespace(c.Namespace),
			location.WithFiles(files), location.WithLogger(log)),
	}, nil
}

// Close forgets the session's credentials files.
func (s *Session) Close() error { return s.files.Close() }

// WriteJSON writes a command's report as indented JSON, with <, > and & as they are.
func WriteJSON(w io.Writer, report any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(report)
}

// Table is the writer a command's text report aligns its tab-separated columns with; Flush
// writes them.
func Table(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0) }

// Seconds is a duration in a command's report, which JSON writes as a number of seconds (to the
// millisecond), for alerts to compare; its field names say "Seconds".
type Seconds time.Duration

// Duration is s as a time.Duration.
func (s Seconds) Duration() time.Duration { return time.Duration(s) }

// MarshalJSON writes s as a number of seconds.
func (s Seconds) MarshalJSON() ([]byte, error) {
	return strconv.AppendFloat(nil, s.Duration().Round(time.Millisecond).Seconds(), 'f', -1, 64), nil
}

// UnmarshalJSON reads a number of seconds.
func (s *Seconds) UnmarshalJSON(b []byte) error {
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return fmt.Errorf("a duration in seconds: %w", err)
	}
	*s = Seconds(math.Round(f * float64(time.Second)))
	return nil
}
