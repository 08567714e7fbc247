package supervise

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"sync/atomic"
	"syscall"
)

// The guardian is the process between leasetop run and its command. It
// exists so that the command's whole process tree stops when leasetop run
// dies, by any signal, SIGKILL included: the kernel's parent-death signal
// reaches only a direct child, and nothing runs in a process killed with
// SIGKILL. The guardian is leasetop itself, started again as the hidden
// command run-guardian with guardianMarker in its environment (run by hand it
// refuses). It
//
//   - is a child subreaper (prctl(2), PR_SET_CHILD_SUBREAPER): whatever the
//     command forks stays its descendant even when the intermediate parents
//     exit, so it can find all of them, also those that left the command's
//     process group (setsid, setpgid);
//   - reads the command's argv and environment from the socket on its fd 3
//     (leasetop holds the other end), starts the command in its own process
//     group with SIGKILL as its parent-death signal, reports its pid, and
//     swaps its own stdin, stdout and stderr for /dev/null;
//   - when the command exits, reports its wait status, kills what it left
//     behind (SIGKILL to the group and to every descendant), reaps until it
//     has no child left, reports that the tree is gone and exits;
//   - when the socket reads EOF before that (leasetop exited or was
//     killed), does the same without waiting for the command.
//
// It catches and drops SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2
// (leasetop forwards those to the command's group itself), carries no
// parent-death signal, and its environment is leasetop's without the
// database secrets (guardianEnv).

// Forwarded are the signals leasetop run passes on to the command's process
// group (Child.Signal); the guardian catches and drops them.
var Forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

// GuardianCommand is the hidden command that runs the guardian.
const GuardianCommand = "run-guardian"

// guardianMarker is set (to guardianMarkerValue) in the guardian's
// environment by leasetop run only, so that the hidden command cannot be
// started by accident.
const (
	guardianMarker      = "LEASETOP_RUN_GUARDIAN"
	guardianMarkerValue = "fd3"
)

// guardianFD is the guardian's end of its socket to leasetop run.
const guardianFD = 3

// guardianSpec is what leasetop run sends the guardian: the command.
type guardianSpec struct {
	Argv []string `json:"argv"`
	Env  []string `json:"env"`
}

// guardianMsg is one report from the guardian to leasetop run, one JSON
// object a line: first Pid (the command runs) or Error with Code (it could
// not start), then Status (the command exited; its raw wait status), then
// Gone (no process of its tree is left).
type guardianMsg struct {
	Pid    int     `json:"pid,omitempty"`
	Error  string  `json:"error,omitempty"`
	Code   int     `json:"code,omitempty"`
	Status *uint32 `json:"status,omitempty"`
	Gone   bool    `json:"gone,omitempty"`
}

// ErrNotGuardian is Guardian's refusal to run when leasetop run did not
// start it.
var ErrNotGuardian = errors.New(GuardianCommand + " is internal to leasetop run, not a command")

// Guardian is the hidden command run-guardian: the guardian's life, as
// leasetop run starts it (getenv is the environment, args the command's
// arguments: none). It returns its exit code, or ErrNotGuardian when
// leasetop run did not start it (run by hand).
func Guardian(getenv func(string) string, args []string) (int, error) {
	var st syscall.Stat_t
	if getenv(guardianMarker) != guardianMarkerValue || len(args) != 0 ||
		syscall.Fstat(guardianFD, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFSOCK {
		return 0, ErrNotGuardian
	}
	syscall.CloseOnExec(guardianFD) // the command must not inherit it
	return guard(os.NewFile(guardianFD, "leasetop run")), nil
}

// guard is the guardian's life; it returns its exit code.
func guard(ctl *os.File) int {
	// The command's parent-death signal (SIGKILL, should the guardian
	// itself be killed) fires when the OS *thread* that forked it exits,
	// not the process (prctl(2), PR_SET_PDEATHSIG), and the Go runtime may
	// retire idle threads: this goroutine forks the command, waits for the
	// whole tree, and keeps its thread to the end.
	runtime.LockOSThread()
	signal.Notify(make(chan os.Signal, 1), Forwarded...) // caught and dropped; reset to default in the command by exec
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		return reportFailure(ctl, fmt.Errorf("prctl(PR_SET_CHILD_SUBREAPER): %w", errno))
	}
	in := bufio.NewReader(ctl)
	out := json.NewEncoder(ctl)
	line, err := in.ReadBytes('\n')
	if err != nil {
		return 0 // leasetop ended before sending the command: nothing to guard
	}
	var spec guardianSpec
	if err := json.Unmarshal(line, &spec); err != nil || len(spec.Argv) == 0 {
		return reportFailure(ctl, fmt.Errorf("bad command from leasetop run: %v", err))
	}
	cmd := exec.Command(spec.Argv[0], spec.Argv[1:]...)
	cmd.Env = spec.Env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = out.Encode(guardianMsg{Error: err.Error(), Code: StartCode(err)})
		return 0
	}
	pid := cmd.Process.Pid
	_ = out.Encode(guardianMsg{Pid: pid})
	releaseStdio()

	// group is the command's process group while its id is surely still
	// the command's (the command not yet reaped, or just now); 0 after:
	// the id may then be reused, and the scans of descendants find what is
	// left of the group.
	var killing atomic.Bool
	var group atomic.Int64
	group.Store(int64(pid))
	go func() { // leasetop's end closes only when leasetop is done or dead
		_, _ = io.Copy(io.Discard, in)
		killing.Store(true)
		killTree(int(group.Load()))
	}()
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(-1, &ws, 0, nil)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil: // ECHILD: no process of the tree is left
			_ = out.Encode(guardianMsg{Gone: true})
			return 0
		case got == pid:
			status := uint32(ws)
			_ = out.Encode(guardianMsg{Status: &status})
			killing.Store(true)
			killTree(pid)
			group.Store(0)
			continue
		}
		if killing.Load() {
			killTree(int(group.Load()))
		}
	}
}

// prSetChildSubreaper is PR_SET_CHILD_SUBREAPER (linux/prctl.h).
const prSetChildSubreaper = 36

// reportFailure tells leasetop run the guardian could not start the
// command.
func reportFailure(ctl *os.File, err error) int {
	_ = json.NewEncoder(ctl).Encode(guardianMsg{Error: err.Error(), Code: exitFailure})
	return exitFailure
}

// releaseStdio points the guardian's stdin, stdout and stderr at /dev/null,
// so that only the command keeps leasetop's open.
func releaseStdio() {
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return
	}
	defer null.Close()
	for fd := range 3 {
		_ = syscall.Dup3(int(null.Fd()), fd, 0)
	}
}
