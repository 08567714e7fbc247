package cli

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"runtime"
	"syscall"
)

// child is the command leasetop run supervises, in its own process group.
type child struct {
	pid  int // also its process group id
	done chan childExit
}

// childExit is how the command ended.
type childExit struct {
	state *os.ProcessState
	err   error
}

// startChild starts argv in a new process group with env, and returns once
// it runs. The command must not outlive leasetop, even a kill -9 of
// leasetop: the kernel sends it SIGKILL when its parent dies (Pdeathsig).
//
// Go caveat: Pdeathsig fires when the OS *thread* that forked the child
// exits, not when the process does (prctl(2), PR_SET_PDEATHSIG), and the Go
// runtime may retire idle threads. So the child is started and waited for on
// a goroutine locked to its thread, which it never unlocks: the thread lives
// exactly as long as the wait, and when the goroutine returns (the child has
// exited) the runtime ends the thread with it.
//
// Pdeathsig reaches only the command itself; processes it forks should exit
// with it (in shell scripts, exec the long-running program).
func startChild(argv, env []string, stdin io.Reader, stdout, stderr io.Writer) (*child, error) {
	c := &child{done: make(chan childExit, 1)}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: see above
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = env
		cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		c.pid = cmd.Process.Pid
		started <- nil
		err := cmd.Wait()
		c.done <- childExit{state: cmd.ProcessState, err: err}
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return c, nil
}

// signal sends sig to the command's whole process group. A group that is
// gone already is not an error.
func (c *child) signal(sig syscall.Signal) {
	if err := syscall.Kill(-c.pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		_ = syscall.Kill(c.pid, sig) // at least the command itself
	}
}

// code is the exit code leasetop run passes on: the command's own, or
// 128+N when signal N killed it.
func (e childExit) code() int {
	if e.state == nil {
		return ExitFailure
	}
	if ws, ok := e.state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return e.state.ExitCode()
}

// startErrorCode is the shell's convention for a command that cannot run:
// 127 not found, 126 not executable.
func startErrorCode(err error) int {
	switch {
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, fs.ErrNotExist):
		return 127
	case errors.Is(err, fs.ErrPermission):
		return 126
	}
	return ExitFailure
}
