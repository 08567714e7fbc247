package proctest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Tmux is a terminal a test drives as a user would: a tmux server of the
// test's own (its socket in the test's temporary folder, so the test never
// touches the user's tmux) running one session. The session and its server
// are killed when the test ends.
type Tmux struct {
	t      testing.TB
	bin    string
	socket string
	env    []string
}

// StartTmux runs command (a shell command line) in a detached tmux session
// of width x height, with this process's environment and extra on top.
func StartTmux(t testing.TB, width, height int, extra []string, command string) *Tmux {
	t.Helper()
	bin, err := exec.LookPath("tmux")
	if err != nil {
		t.Fatalf("tmux is needed to drive leasetop in a terminal: install it (apt-get install tmux): %v", err)
	}
	tm := &Tmux{t: t, bin: bin, socket: filepath.Join(t.TempDir(), "tmux")}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TMUX=") {
			tm.env = append(tm.env, kv)
		}
	}
	tm.env = append(tm.env, extra...)
	tm.run("new-session", "-d", "-s", "t", "-x", fmt.Sprint(width), "-y", fmt.Sprint(height), command)
	t.Cleanup(func() {
		_ = tm.cmd("kill-session", "-t", "t").Run()
		_ = tm.cmd("kill-server").Run()
	})
	return tm
}

func (tm *Tmux) cmd(args ...string) *exec.Cmd {
	c := exec.Command(tm.bin, append([]string{"-S", tm.socket}, args...)...)
	c.Env = tm.env
	return c
}

func (tm *Tmux) run(args ...string) string {
	tm.t.Helper()
	out, err := tm.cmd(args...).CombinedOutput()
	if err != nil {
		tm.t.Fatalf("tmux %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// Screen is what a user sees now.
func (tm *Tmux) Screen() string { return tm.run("capture-pane", "-p", "-t", "t") }

// StyledScreen is Screen with its colours and attributes, as escape
// sequences.
func (tm *Tmux) StyledScreen() string { return tm.run("capture-pane", "-p", "-e", "-t", "t") }

// Keys presses keys (tmux key names: Tab, Enter, Escape, C-c, or text).
func (tm *Tmux) Keys(keys ...string) {
	tm.t.Helper()
	tm.run(append([]string{"send-keys", "-t", "t"}, keys...)...)
}

// Type types text literally (no key names).
func (tm *Tmux) Type(text string) {
	tm.t.Helper()
	tm.run("send-keys", "-t", "t", "-l", text)
}

// WaitFor polls the screen until ok accepts it, and returns it; at the
// deadline the test fails showing the last screen.
func (tm *Tmux) WaitFor(what string, timeout time.Duration, ok func(screen string) bool) string {
	tm.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		s := tm.Screen()
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			tm.t.Fatalf("the screen did not show %s within %s; it shows:\n%s", what, timeout, s)
		}
		time.Sleep(100 * time.Millisecond) // the poll interval, not a wait for readiness
	}
}
