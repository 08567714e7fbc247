package faults_test

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
)

// Bad input: a terminal of 20x5. The real `leasetop watch`, on a pty of
// 20x5 against a live database, says the terminal is too small instead of
// drawing a broken screen, draws the monitor once the terminal grows, and
// quits on q with exit 0: no panic, no stack trace.
func TestWatchOnA20x5Terminal(t *testing.T) {
	r := newRig(t, 1)
	r.exec(`SELECT lease.acquire($1, $2, $3, '1 min', 'dev-1')`, r.keys[0].Account, r.keys[0].Session, uuid.New())
	p := openPTY(t, 20, 5)
	cmd := exec.Command(leasetopBin, "watch", "--dsn", r.url)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = p.term, p.term, p.term
	cmd.Env = append(os.Environ(), "TERM=xterm-256color", "XDG_CONFIG_HOME="+t.TempDir())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0} // the pty is its controlling terminal
	w := startProc(t, cmd)
	p.readOutput()

	eventually(t, 30*time.Second, "the too-small notice", func() bool { return strings.Contains(p.screen(), "too small") })
	small := p.screen()
	p.resize(t, 100, 30)
	eventually(t, 30*time.Second, "the monitor's table after the terminal grew", func() bool {
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
