package faults_test

import (
	"net/url"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// Bad input: a terminal of 20x5. The real `leasetop watch`, on a pty of
// 20x5 against a live database, says the terminal is too small instead of
// drawing a broken screen, draws the monitor once the terminal grows, and
// quits on q with exit 0: no panic, no stack trace.
func TestWatchOnA20x5Terminal(t *testing.T) {
	t.Parallel()
	r := newRig(t, 1)
	r.exec(`SELECT lease.acquire($1, $2, $3, '1 min', 'dev-1')`, r.keys[0].Account, r.keys[0].Session, uuid.New())
	p := openPTY(t, 20, 5)
	w := startWatch(t, p, "--dsn", r.url)

	pgtest.Eventually(t, 30*time.Second, "the too-small notice", func() bool { return strings.Contains(p.screen(), "too small") })
	small := p.screen()
	p.resize(t, 100, 30)
	pgtest.Eventually(t, 30*time.Second, "the monitor's table after the terminal grew", func() bool {
		s := p.screen()
		return strings.Contains(s, "dev-1") && strings.Contains(s, "LIVE")
	})
	p.typeKeys(t, "q")
	if code := w.wait(t); code != 0 {
		t.Errorf("leasetop watch exit = %d after q, want 0; screen: %q", code, p.screen())
	}
	if s := p.raw(); strings.Contains(s, "panic") || strings.Contains(s, "goroutine ") {
		t.Errorf("the terminal shows a panic: %q", s)
	}
	if i := strings.Index(small, "terminal too small"); i >= 0 {
		small = small[i:]
	}
	report(t, "terminal-20x5", "shows", strings.Join(strings.Fields(small), " "), "exit_after_q", 0)
}

// Audit, end to end: an operator logged in as a lease_admin member
// force-releases a lease with `leasetop release`; lease.event records the
// login role (not the function's owner) and the reason, and the running
// `leasetop watch` shows both.
func TestForcedReleaseIsAuditedOnScreen(t *testing.T) {
	t.Parallel()
	r := newRig(t, 1)
	run := uuid.New()
	r.exec(`SELECT lease.acquire($1, $2, $3, '1 min', 'dev-1')`, r.keys[0].Account, r.keys[0].Session, run)
	operator := r.login("ops", "lease_admin")

	p := openPTY(t, 120, 30)
	w := startWatch(t, p, "--dsn", r.url)
	pgtest.Eventually(t, 30*time.Second, "the monitor's table", func() bool { return strings.Contains(p.screen(), "dev-1") })

	out, err := exec.Command(leasetopBin, "release", "--dsn", operator.url, "--account", r.keys[0].Account,
		"--session", r.keys[0].Session, "--reason", "INC-42 wedged").CombinedOutput()
	if err != nil {
		t.Fatalf("leasetop release as %s: %v: %s", operator.role, err, out)
	}
	var actor, reason string
	if err := r.store.Pool().QueryRow(t.Context(), `SELECT actor, reason FROM lease.event WHERE kind = 'force_released'`).Scan(&actor, &reason); err != nil {
		t.Fatal(err)
	}
	if actor != operator.role || reason != "INC-42 wedged" {
		t.Errorf("force_released event actor %q reason %q, want the login role %q and the reason", actor, reason, operator.role)
	}
	want := "by " + operator.role + ": INC-42 wedged"
	pgtest.Eventually(t, 30*time.Second, "the monitor to show "+want, func() bool { return strings.Contains(p.screen(), want) })
	p.typeKeys(t, "q")
	if code := w.wait(t); code != 0 {
		t.Errorf("leasetop watch exit = %d after q, want 0", code)
	}
	u, err := url.Parse(r.url)
	if err != nil {
		t.Fatal(err)
	}
	watchPassword, _ := u.User.Password()
	if screen := p.raw(); strings.Contains(screen+string(out), operator.password) || strings.Contains(screen, watchPassword) {
		t.Error("a password appears on the monitor's screen or in release's output")
	}
	report(t, "forced-release-audit", "actor", actor, "reason", strconv.Quote(reason), "monitor_shows", strconv.Quote(want))
}

// Interrupting the monitor: SIGINT, SIGTERM and SIGHUP (kill, a closed
// terminal) end `leasetop watch` as they end every command (docs/cli.md,
// Exit codes): it gives the terminal back (leaves the alternate screen) and
// exits 128+N by itself, with one line saying so. (ctrl+c typed in the
// monitor is a key: quit, exit 0.)
func TestWatchInterrupted(t *testing.T) {
	t.Parallel()
	r := newRig(t, 1)
	r.exec(`SELECT lease.acquire($1, $2, $3, '1 min', 'dev-1')`, r.keys[0].Account, r.keys[0].Session, uuid.New())
	for _, tt := range []struct {
		sig  syscall.Signal
		name string
	}{{syscall.SIGINT, "SIGINT"}, {syscall.SIGTERM, "SIGTERM"}, {syscall.SIGHUP, "SIGHUP"}} {
		t.Run(tt.name, func(t *testing.T) {
			p := openPTY(t, 100, 30)
			w := startWatch(t, p, "--dsn", r.url)
			pgtest.Eventually(t, 30*time.Second, "the monitor's table", func() bool {
				s := p.screen()
				return strings.Contains(s, "dev-1") && strings.Contains(s, "LIVE")
			})
			w.Signal(t, tt.sig)
			code := w.wait(t)
			if ws, ok := w.Cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				t.Fatalf("leasetop watch was killed by %v, want it to give the terminal back and exit %d", ws.Signal(), 128+int(tt.sig))
			}
			if code != 128+int(tt.sig) {
				t.Errorf("leasetop watch exit = %d after %s, want %d", code, tt.name, 128+int(tt.sig))
			}
			out := p.drain()
			if enter, leave := strings.LastIndex(out, "\x1b[?1049h"), strings.LastIndex(out, "\x1b[?1049l"); enter < 0 || leave < enter {
				t.Errorf("the alternate screen was entered at %d and left at %d: the terminal was not given back", enter, leave)
			}
			if s := ansi.Strip(out); !strings.Contains(s, "leasetop: interrupted by "+tt.name) || strings.Contains(s, "goroutine ") {
				t.Errorf("the terminal does not end with the line %q: %q", "leasetop: interrupted by "+tt.name, s[max(0, len(s)-300):])
			}
		})
	}
}
