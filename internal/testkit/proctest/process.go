package proctest

import (
	"errors"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/testkit/syncbuf"
)

// Process is a child process that a test started with Start: its output
// captured, its exit awaited in the background, and killed when the test
// ends if it still runs.
type Process struct {
	// Cmd is the command, started.
	Cmd *exec.Cmd
	// Stdout and Stderr hold what the process wrote where Cmd left its
	// Stdout or Stderr nil; a caller that set them reads its own.
	Stdout, Stderr syncbuf.Buffer

	done     chan struct{}
	code     int
	killedBy syscall.Signal
	err      error
}

// Start starts cmd and waits for it in the background. Cmd's environment,
// attributes and any output it sets are the caller's; nil Stdout and Stderr
// are captured in the Process. When t ends the process, if it still runs,
// is continued (a test may have stopped it) and killed, and reaped.
func Start(t testing.TB, cmd *exec.Cmd) *Process {
	t.Helper()
	p := &Process{Cmd: cmd, done: make(chan struct{})}
	if cmd.Stdout == nil {
		cmd.Stdout = &p.Stdout
	}
	if cmd.Stderr == nil {
		cmd.Stderr = &p.Stderr
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", cmd.Path, err)
	}
	go func() { // owned by p: done is closed when it returns, and the cleanup waits for done
		defer close(p.done)
		p.err = cmd.Wait()
		p.code, p.killedBy = ExitStatus(p.err)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = cmd.Process.Signal(syscall.SIGCONT)
			_ = cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// ExitStatus is the exit code that cmd.Wait's err stands for, as a shell
// reports it: 128+N when signal N killed the process (killedBy is then N,
// and 0 when the process exited by itself, even with 128+N), -1 when the
// process could not be waited for.
func ExitStatus(err error) (code int, killedBy syscall.Signal) {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, 0
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), ws.Signal()
		}
		return ee.ExitCode(), 0
	default:
		return -1, 0
	}
}

// PID is the process's id.
func (p *Process) PID() int { return p.Cmd.Process.Pid }

// Done is closed when the process has exited and been reaped.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Code is the exit code (see ExitStatus); read it after Done is closed.
func (p *Process) Code() int { return p.code }

// KilledBy is the signal that killed the process, 0 when it exited by
// itself; read it after Done is closed.
func (p *Process) KilledBy() syscall.Signal { return p.killedBy }

// Err is what cmd.Wait returned; read it after Done is closed.
func (p *Process) Err() error { return p.err }

// Wait waits up to timeout for the process to exit and returns its exit
// code, failing t (with the command and its stderr) if it still runs.
func (p *Process) Wait(t testing.TB, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
		return p.code
	case <-time.After(timeout):
		t.Fatalf("%v (pid %d) still running after %s; stderr: %s", p.Cmd.Args, p.PID(), timeout, p.Stderr.String())
		return 0
	}
}

// Signal sends sig to the process, failing t if it cannot.
func (p *Process) Signal(t testing.TB, sig syscall.Signal) {
	t.Helper()
	if err := syscall.Kill(p.PID(), sig); err != nil {
		t.Fatalf("kill(%d, %v): %v", p.PID(), sig, err)
	}
}
