package demo_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// tmuxTerm is a tmux server of the test's own (its own socket in the test's
// temporary folder, so the test never touches the user's tmux) running one
// session at 150x40.
type tmuxTerm struct {
	t      *testing.T
	bin    string
	socket string
	env    []string
}

// startTmux runs command in a detached 150x40 tmux session. The session is
// killed, and its server with it, when the test ends.
func startTmux(t *testing.T, command string) *tmuxTerm {
	t.Helper()
	return startTmuxSized(t, 150, 40, command)
}

// startTmuxSized is startTmux in a terminal of width x height.
func startTmuxSized(t *testing.T, width, height int, command string) *tmuxTerm {
	t.Helper()
	bin, err := exec.LookPath("tmux")
	if err != nil {
		t.Fatalf("tmux is needed to drive the demo in a terminal: install it (apt-get install tmux): %v", err)
	}
	tm := &tmuxTerm{t: t, bin: bin, socket: filepath.Join(t.TempDir(), "tmux")}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DATABASE_URL=") && !strings.HasPrefix(kv, "TMUX=") {
			tm.env = append(tm.env, kv) // the demo starts its own server
		}
	}
	tm.run("new-session", "-d", "-s", "demo", "-x", fmt.Sprint(width), "-y", fmt.Sprint(height), command)
	t.Cleanup(func() {
		_ = tm.cmd("kill-session", "-t", "demo").Run()
		_ = tm.cmd("kill-server").Run()
	})
	return tm
}

func (tm *tmuxTerm) cmd(args ...string) *exec.Cmd {
	c := exec.Command(tm.bin, append([]string{"-S", tm.socket}, args...)...)
	c.Env = tm.env
	return c
}

func (tm *tmuxTerm) run(args ...string) string {
	tm.t.Helper()
	out, err := tm.cmd(args...).CombinedOutput()
	if err != nil {
		tm.t.Fatalf("tmux %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// screen is what a user sees now.
func (tm *tmuxTerm) screen() string { return tm.run("capture-pane", "-p", "-t", "demo") }

// keys presses keys (tmux key names: Tab, Enter, Escape, or characters).
func (tm *tmuxTerm) keys(keys ...string) {
	tm.run(append([]string{"send-keys", "-t", "demo"}, keys...)...)
}

// waitFor polls the screen until ok accepts it, and returns it; at the
// deadline the test fails showing the last screen.
func (tm *tmuxTerm) waitFor(what string, timeout time.Duration, ok func(screen string) bool) string {
	tm.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		s := tm.screen()
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			tm.t.Fatalf("the screen did not show %s within %s; it shows:\n%s", what, timeout, s)
		}
		time.Sleep(200 * time.Millisecond) // the poll interval, not a wait for readiness
	}
}

var (
	deviceRowRe = regexp.MustCompile(`(?m)^[ ▶] (acme|globex) +(desktop|browser|phone) +\d+ `)
	holdingRe   = regexp.MustCompile(`holding chat-\d run [0-9a-f]{8} fence \d+ .*✓ holds chat-\d · server: agrees`)
	preemptedRe = regexp.MustCompile(`(?m)^[ ▶] (acme|globex) +(desktop|browser|phone) +\d+ preempted by (desktop|browser|phone) pid \d+: chat-\d run [0-9a-f]{8}`)
	followingRe = regexp.MustCompile(`(?m)^[ ▶] (acme|globex) +(desktop|browser|phone) +\d+ following (desktop|browser|phone) pid \d+'s run [0-9a-f]{8} in chat-\d`)
	handedRe    = regexp.MustCompile(`(?m)^[ ▶] (acme|globex) +(desktop|browser|phone) +\d+ (handed chat-\d over to (desktop|browser|phone) pid \d+|holding chat-\d run [0-9a-f]{8} fence \d+ \(handed over by)`)
	attemptRe   = regexp.MustCompile(`(?m)^  \d\d:\d\d:\d\d\.\d{3} pid \d+ +(acquire|wait|write|release) .*→ (granted: fence \d+|busy: \S+ pid \d+ has it|accepted by the fence check|released)`)
)

// TestDemoInTmux drives the real demo in a real terminal: `leasetop demo
// --seed 42` in tmux at 150x40, as a user would run it. The devices pane is
// there by default with a row per device process and a device holding a
// session that the server agrees it holds; within the first minute a
// device row says it was preempted by another device, one that it
// follows another device's run, and one a hand-over (the busy
// strategies); d hides it and shows it again;
// tab and enter open a device's attempts with the server's answers; esc
// goes back; q quits and the demo's summary says every invariant held.
func TestDemoInTmux(t *testing.T) {
	t.Parallel()
	tm := startTmux(t, fmt.Sprintf("'%s' demo --seed 42; echo \"leasetop exited $?\"; sleep 600", leasetopBin))

	s := tm.waitFor("six device rows, one holding a session the server agrees on", 90*time.Second, func(s string) bool {
		return strings.Contains(s, "DEVICES") && len(deviceRowRe.FindAllString(s, -1)) == 6 && holdingRe.MatchString(s)
	})
	if !strings.Contains(s, "d devices") {
		t.Errorf("the key hints do not offer d for the devices pane:\n%s", s)
	}
	tm.waitFor("a device row preempted by another device", 90*time.Second, func(s string) bool { return preemptedRe.MatchString(s) })
	tm.waitFor("a device row following another device's run", 90*time.Second, func(s string) bool { return followingRe.MatchString(s) })
	tm.waitFor("a device row with a hand-over", 90*time.Second, func(s string) bool { return handedRe.MatchString(s) })

	tm.keys("d")
	tm.waitFor("the pane hidden", 10*time.Second, func(s string) bool {
		return !strings.Contains(s, "DEVICES") && strings.Contains(s, "devices pane hidden") && strings.Contains(s, "EVENTS")
	})
	tm.keys("d")
	tm.waitFor("the pane back", 10*time.Second, func(s string) bool {
		return strings.Contains(s, "DEVICES") && len(deviceRowRe.FindAllString(s, -1)) == 6
	})

	tm.keys("Tab")
	tm.waitFor("the pane focused", 10*time.Second, func(s string) bool { return strings.Contains(s, "▶ DEVICES (focused") })
	tm.keys("Enter")
	s = tm.waitFor("the first device's attempts with the server's answers", 10*time.Second, func(s string) bool {
		return strings.Contains(s, "Device desktop of acme") && attemptRe.MatchString(s)
	})
	for _, want := range []string{"state", "believes", "counters", "Attempts newest first"} {
		if !strings.Contains(s, want) {
			t.Errorf("the device's view lacks %q:\n%s", want, s)
		}
	}
	tm.keys("Escape")
	tm.waitFor("the main screen again", 10*time.Second, func(s string) bool {
		return strings.Contains(s, "DEVICES") && strings.Contains(s, "EVENTS") && !strings.Contains(s, "Attempts newest first")
	})

	tm.keys("q")
	s = tm.waitFor("the demo's end", 60*time.Second, func(s string) bool { return strings.Contains(s, "leasetop exited") })
	if !strings.Contains(s, "leasetop exited 0") || !strings.Contains(s, "ok    8. every ask ended") {
		t.Errorf("after q, want the summary with every invariant ok and exit 0:\n%s", s)
	}
}

// lastLine is the screen's bottom line: the status line.
func lastLine(screen string) string {
	lines := strings.Split(strings.TrimRight(screen, "\n"), "\n")
	return lines[len(lines)-1]
}

// TestDemoKeysSayWhatTheyDidAt80x24: K and Z on the selected session say
// in the status line, first, what they did ("kill -9 phone pid 16663, which
// holds …", "SIGSTOP …"); the line used to start at the device, the action
// left out. A key that finds no live holder (the session expired, its
// holder already killed or frozen) says so, and is pressed again until one
// holds it.
func TestDemoKeysSayWhatTheyDidAt80x24(t *testing.T) {
	t.Parallel()
	tm := startTmuxSized(t, 80, 24, fmt.Sprintf("'%s' demo --seed 42 --no-chaos --ttl 2s; echo \"leasetop exited $?\"; sleep 600", leasetopBin))
	// A session row: "phone pid 3412  98c62510": the holder column is padded,
	// so a label shorter than the column (a 4-digit pid) leaves two spaces.
	tm.waitFor("a held session", 90*time.Second, func(s string) bool { return regexp.MustCompile(`pid \d+ +[0-9a-f]{8} `).MatchString(s) })
	for _, k := range []struct{ key, action string }{{"K", "kill -9 "}, {"Z", "SIGSTOP "}} {
		tm.keys(k.key)
		s := tm.waitFor(k.key+" saying "+k.action, 60*time.Second, func(s string) bool {
			status := lastLine(s)
			if strings.HasPrefix(status, k.action) {
				return true
			}
			if strings.Contains(status, "no device holds") {
				tm.keys(k.key) // nobody alive holds the selected session now: try again
			}
			return false
		})
		if status := lastLine(s); !regexp.MustCompile(`pid \d+`).MatchString(status) {
			t.Errorf("after %s the status line is %q, want the action and the device it hit", k.key, status)
		}
	}
	tm.keys("q")
	s := tm.waitFor("the demo's end", 60*time.Second, func(s string) bool { return strings.Contains(s, "leasetop exited") })
	if !strings.Contains(s, "leasetop exited 0") {
		t.Errorf("after q, want exit 0:\n%s", s)
	}
}
