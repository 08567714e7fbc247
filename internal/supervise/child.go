package supervise

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"sync/atomic"
	"syscall"
)

// Child is the command leasetop run supervises, in its own process group,
// started and watched by the guardian (guardian.go).
type Child struct {
	pid  int // also its process group id
	done chan Exit
	// exited is set when the guardian reports the command's exit: its
	// group id may then be freed and reused, so signal sends nothing more
	// (the guardian kills what is left).
	exited atomic.Bool
}

// Exit is how the command ended, reported once no process of its tree is
// left.
type Exit struct {
	status syscall.WaitStatus
	ok     bool // false: the guardian ended without reporting it
}

// Reported reports whether the guardian said how the command exited (it
// ended without saying when it was killed itself).
func (e Exit) Reported() bool { return e.ok }

// StartError is a command that cannot start (Check, Start): Code is the
// shell's exit code for it (127 not found, 126 not executable) and Reason
// why, without the command's name.
type StartError struct {
	Code   int
	Reason string
}

func (e *StartError) Error() string { return e.Reason }

// exitFailure is leasetop's exit code for a failure of its own (cli's
// ExitFailure).
const exitFailure = 1

// Start starts argv with env in a new process group under a guardian,
// and returns once it runs. The guardian is leasetop started again as its
// hidden command run-guardian; it gets stdin, stdout and stderr (which it
// hands to the command and then drops), leasetop's environment without the
// database secrets, and one end of a socket whose other end only leasetop
// holds. When leasetop dies, by any signal, the socket reads EOF and the
// guardian kills the command's whole tree. When the command exits, the
// guardian kills what it left, and done receives its exit once the whole
// tree is gone. The guardian has no parent-death signal: it must outlive
// leasetop.
func Start(argv, env []string, stdin io.Reader, stdout, stderr io.Writer) (*Child, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socketpair: %w", err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "guardian"), os.NewFile(uintptr(fds[1]), "leasetop run")
	g := exec.Command("/proc/self/exe", GuardianCommand) // this binary, even if replaced on disk meanwhile
	g.Args[0] = "leasetop"
	g.Env = append(guardianEnv(os.Environ()), guardianMarker+"="+guardianMarkerValue)
	g.Stdin, g.Stdout, g.Stderr = stdin, stdout, stderr
	g.ExtraFiles = []*os.File{theirs} // fd 3
	// Its own process group: a terminal's ctrl+c reaches leasetop, which
	// forwards it to the command's group, not to the guardian.
	g.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = g.Start()
	theirs.Close()
	if err != nil {
		ours.Close()
		return nil, fmt.Errorf("start the command's guardian: %w", err)
	}
	msgs := json.NewDecoder(ours)
	first, err := startGuardian(ours, msgs, argv, env)
	if err != nil || first.Pid == 0 {
		ours.Close()
		_ = g.Wait()
		if err == nil {
			err = &StartError{Code: cmp.Or(first.Code, exitFailure), Reason: cmp.Or(first.Error, "the command's guardian did not start it")}
		}
		return nil, err
	}
	c := &Child{pid: first.Pid, done: make(chan Exit, 1)}
	go func() {
		defer ours.Close()
		var ex Exit
		for {
			var m guardianMsg
			if msgs.Decode(&m) != nil || m.Gone {
				break
			}
			if m.Status != nil {
				c.exited.Store(true)
				ex = Exit{status: syscall.WaitStatus(*m.Status), ok: true}
			}
		}
		_ = g.Wait()
		c.done <- ex
	}()
	return c, nil
}

// startGuardian sends the guardian the command and reads its first report.
func startGuardian(w io.Writer, msgs *json.Decoder, argv, env []string) (guardianMsg, error) {
	var m guardianMsg
	if err := json.NewEncoder(w).Encode(guardianSpec{Argv: argv, Env: env}); err != nil {
		return m, fmt.Errorf("send the command to its guardian: %w", err)
	}
	if err := msgs.Decode(&m); err != nil {
		return m, fmt.Errorf("the command's guardian ended before starting it: %w", err)
	}
	return m, nil
}

// Done receives how the command ended, once no process of its tree is
// left (the guardian killed what it left).
func (c *Child) Done() <-chan Exit { return c.done }

// Signal sends sig to the command's whole process group, until the command
// exited. A group that is gone already is not an error.
func (c *Child) Signal(sig syscall.Signal) {
	if c.exited.Load() {
		return
	}
	if err := syscall.Kill(-c.pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		_ = syscall.Kill(c.pid, sig) // at least the command itself
	}
}

// Code is the exit code leasetop run passes on: the command's own, or
// 128+N when signal N killed it (1 when the guardian did not say).
func (e Exit) Code() int {
	switch {
	case !e.ok:
		return exitFailure
	case e.status.Signaled():
		return 128 + int(e.status.Signal())
	}
	return e.status.ExitStatus()
}

// StartCode is the shell's convention for a command that cannot run, for
// Start's error: 127 not found, 126 not executable, else 1.
func StartCode(err error) int {
	var se *StartError
	switch {
	case errors.As(err, &se):
		return se.Code
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, fs.ErrNotExist):
		return 127
	case errors.Is(err, fs.ErrPermission):
		return 126
	}
	return exitFailure
}
