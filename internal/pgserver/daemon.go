package pgserver

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// daemon is one long-running helper process of a Patroni cluster (etcd,
// Patroni, HAProxy): run as the server user, in a process group of its own
// (so a terminal's ctrl+c reaches only its owner, which stops it), told to
// stop by the kernel if this process dies (Pdeathsig), its output in a log
// file.
type daemon struct {
	name string
	log  string // path of its output
	cmd  *exec.Cmd
	done chan struct{} // closed when it exits
}

// startDaemon starts name with args as the credential cred (nil: this
// user), its output appended to logPath, in dir.
func startDaemon(cred *syscall.Credential, dir, logPath, name string, args ...string) (*daemon, error) {
	out, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s log: %w", name, err)
	}
	defer out.Close() // the child has its own copy
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LC_ALL=C.UTF-8", "TZ=UTC")
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	d := &daemon{name: name, log: logPath, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(d.done) }()
	return d, nil
}

// pid returns the daemon's process id.
func (d *daemon) pid() int { return d.cmd.Process.Pid }

// exited reports whether the daemon has exited.
func (d *daemon) exited() bool {
	select {
	case <-d.done:
		return true
	default:
		return false
	}
}

// stop sends sig to the daemon's process group and waits up to grace for it
// to exit; then it kills the group. Safe on a daemon that has exited.
func (d *daemon) stop(sig syscall.Signal, grace time.Duration) {
	if d == nil {
		return
	}
	pgid := d.pid() // Setpgid: its group is its pid
	_ = syscall.Kill(-pgid, sig)
	select {
	case <-d.done:
	case <-time.After(grace):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-d.done
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL) // anything it left in its group
}

// failed says that the daemon exited or did not get ready, with the end of
// its log.
func (d *daemon) failed(what string, err error) error {
	state := "did not get ready"
	if d.exited() {
		state = "exited"
	}
	return fmt.Errorf("%s %s (%s): %w; its log ends: %s", d.name, state, what, err, logTail(d.log, 6))
}

// logTail returns the last n lines of the file at path, on one line.
func logTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// poll calls probe every 50 ms until it returns nil, d (when not nil)
// exits, or timeout passes or ctx ends; the error then says what it waited
// for, with probe's last error and the end of d's log.
func poll(ctx context.Context, timeout time.Duration, d *daemon, what string, probe func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		err := probe(ctx)
		if err == nil {
			return nil
		}
		var exited <-chan struct{}
		if d != nil {
			exited = d.done
		}
		select {
		case <-exited:
			return d.failed(what, err)
		case <-ctx.Done():
			if d != nil {
				return d.failed(what, err)
			}
			return fmt.Errorf("%s: %w", what, err)
		case <-time.After(50 * time.Millisecond): // polling a condition until the deadline
		}
	}
}
