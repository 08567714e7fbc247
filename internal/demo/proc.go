package demo

import (
	"bufio"
	"errors"
	"fmt"
	"github.com/leasetop/leasetop/internal/demo/device"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// proc is the supervisor's slot for one device of one account: the process
// running it now (a deviceProcess in a child), restarted as a new process (a
// new generation) when it dies.
type proc struct {
	idx      int
	name     string
	account  string
	sessions []string

	gen       int
	cmd       *exec.Cmd
	pid       int
	label     string // its holder label, device.HolderLabel(name, pid)
	alive     bool
	frozen    bool
	ready     bool      // it reported ready: it handles SIGUSR1 (the next strategy mix)
	resumeAt  time.Time // when frozen: when to SIGCONT it
	killed    bool      // the demo killed this generation on purpose
	startedAt time.Time
	restartAt time.Time // when dead: when to start it again (zero: never)
	failures  int       // consecutive deaths the demo did not cause
	lastErr   string    // the last line it wrote on stderr
}

// String names the process for the event stream.
func (p *proc) String() string {
	if p.pid == 0 {
		return p.name + " (" + p.account + ")"
	}
	return p.label
}

// procMsg is something a device process did: a line on stdout or stderr, or
// its exit (after both pipes were read to the end).
type procMsg struct {
	idx, gen int
	report   *device.Report
	bad      error // a stdout line that is not a report
	stderr   string
	exited   bool
	state    *os.ProcessState
	waitErr  error
}

// spawner starts device processes and owns the goroutines that read them.
type spawner struct {
	exe  string
	dsn  string
	ttl  time.Duration
	seed int64
	mix  device.Mix
	msgs chan<- procMsg
	wg   *sync.WaitGroup
}

// start starts a new generation of p.
func (s *spawner) start(p *proc) error {
	seed := s.seed*1_000_003 + int64(p.idx)*7919 + int64(p.gen+1)
	cmd := exec.Command(s.exe, "device",
		"--name", p.name, "--account", p.account, "--sessions", strings.Join(p.sessions, ","),
		"--ttl", s.ttl.String(), "--seed", strconv.FormatInt(seed, 10), "--strategy", s.mix.String())
	cmd.Env = deviceEnv(s.dsn)
	// Its own process group: a terminal's ctrl+c reaches only the demo, which
	// stops the devices in order. If the demo dies, the kernel sends SIGTERM
	// (the device also watches its parent; see cli/device.go).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("start %s: %w", p, err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return fmt.Errorf("start %s: %w", p, err)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start device %s: %w", p, err)
	}
	p.gen++
	p.cmd, p.pid, p.alive, p.frozen, p.killed, p.ready = cmd, cmd.Process.Pid, true, false, false, false
	p.label = device.HolderLabel(p.name, p.pid)
	p.startedAt, p.restartAt, p.lastErr = time.Now(), time.Time{}, ""
	idx, gen := p.idx, p.gen
	s.wg.Go(func() {
		var readers sync.WaitGroup
		readers.Go(func() { s.readReports(idx, gen, stdout) })
		readers.Go(func() { s.readStderr(idx, gen, stderr) })
		readers.Wait() // Wait closes the pipes: read them to the end first
		err := cmd.Wait()
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			err = nil // the state says how it ended
		}
		s.msgs <- procMsg{idx: idx, gen: gen, exited: true, state: cmd.ProcessState, waitErr: err}
	})
	return nil
}

func (s *spawner) readReports(idx, gen int, r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), device.MaxReportLine)
	for sc.Scan() {
		rep, err := device.DecodeReport(sc.Bytes())
		if err != nil {
			s.msgs <- procMsg{idx: idx, gen: gen, bad: err}
			continue
		}
		s.msgs <- procMsg{idx: idx, gen: gen, report: &rep}
	}
	_, _ = io.Copy(io.Discard, r) // an overlong line: drain, so the process never blocks
}

func (s *spawner) readStderr(idx, gen int, r io.Reader) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		s.msgs <- procMsg{idx: idx, gen: gen, stderr: sc.Text()}
	}
	_, _ = io.Copy(io.Discard, r)
}

// deviceEnv is the demo's environment with DATABASE_URL set to dsn: the
// devices read the database from it, so no password appears on a command
// line that ps shows.
func deviceEnv(dsn string) []string {
	env := make([]string, 0, len(os.Environ())+1)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DATABASE_URL=") {
			env = append(env, kv)
		}
	}
	return append(env, "DATABASE_URL="+dsn)
}

// signal sends sig to p's current process.
func (p *proc) signal(sig syscall.Signal) error {
	if !p.alive || p.cmd == nil {
		return errors.New("not running")
	}
	return p.cmd.Process.Signal(sig)
}

// exitText says how a process ended.
func exitText(state *os.ProcessState, waitErr error) string {
	switch {
	case waitErr != nil:
		return waitErr.Error()
	case state == nil:
		return "unknown"
	}
	if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return "killed by " + ws.Signal().String()
	}
	return "exit status " + strconv.Itoa(state.ExitCode())
}
