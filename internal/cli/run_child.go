package cli

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

// child is the command leasetop run supervises, in its own process group,
// started and watched by the guardian (run_guardian.go).
type child struct {
	pid  int // also its process group id
	done chan childExit
	// exited is set when the guardian reports the command's exit: its
	// group id may then be freed and reused, so signal sends nothing more
	// (the guardian kills what is left).
	exited atomic.Bool
}

// childExit is how the command ended, reported once no process of its tree
// is left.
type childExit struct {
	status syscall.WaitStatus
	ok     bool // false: the guardian ended without reporting it
}

// startError is a command that could not start: the shell's exit code for
// it (startErrorCode) and the reason.
type startError struct {
	code int
	msg  string
}

func (e *startError) Error() string { return e.msg }

// startChild starts argv with env in a new process group under a guardian,
// and returns once it runs. The guardian is leasetop started again as its
// hidden command run-guardian; it gets stdin, stdout and stderr (which it
// hands to the command and then drops), leasetop's environment without the
// database secrets, and one end of a socket whose other end only leasetop
// holds. When leasetop dies, by any signal, the socket reads EOF and the
// guardian kills the command's whole tree. When the command exits, the
// guardian kills what it left, and done receives its exit once the whole
// tree is gone. The guardian has no parent-death signal: it must outlive
// leasetop.
func startChild(argv, env []string, stdin io.Reader, stdout, stderr io.Writer) (*child, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socketpair: %w", err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "guardian"), os.NewFile(uintptr(fds[1]), "leasetop run")
	g := exec.Command("/proc/self/exe", guardianCommand) // this binary, even if replaced on disk meanwhile
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
			err = &startError{code: cmp.Or(first.Code, ExitFailure), msg: cmp.Or(first.Error, "the command's guardian did not start it")}
		}
		return nil, err
	}
	c := &child{pid: first.Pid, done: make(chan childExit, 1)}
	go func() {
		defer ours.Close()
		var ex childExit
		for {
			var m guardianMsg
			if msgs.Decode(&m) != nil || m.Gone {
				break
			}
			if m.Status != nil {
				c.exited.Store(true)
				ex = childExit{status: syscall.WaitStatus(*m.Status), ok: true}
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

// signal sends sig to the command's whole process group, until the command
// exited. A group that is gone already is not an error.
func (c *child) signal(sig syscall.Signal) {
	if c.exited.Load() {
		return
	}
	if err := syscall.Kill(-c.pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		_ = syscall.Kill(c.pid, sig) // at least the command itself
	}
}

// code is the exit code leasetop run passes on: the command's own, or
// 128+N when signal N killed it.
func (e childExit) code() int {
	switch {
	case !e.ok:
		return ExitFailure
	case e.status.Signaled():
		return 128 + int(e.status.Signal())
	}
	return e.status.ExitStatus()
}

// startErrorCode is the shell's convention for a command that cannot run:
// 127 not found, 126 not executable.
func startErrorCode(err error) int {
	var se *startError
	switch {
	case errors.As(err, &se):
		return se.code
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, fs.ErrNotExist):
		return 127
	case errors.Is(err, fs.ErrPermission):
		return 126
	}
	return ExitFailure
}
