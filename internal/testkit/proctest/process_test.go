package proctest_test

import (
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/testkit/proctest"
)

// Start reports an exit code as a shell does, and tells a process that a
// signal killed from one that exited 128+N by itself.
func TestStartExitStatus(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		script   string
		code     int
		killedBy syscall.Signal
	}{
		{"exit 0", "exit 0", 0, 0},
		{"exit 7", "exit 7", 7, 0},
		{"exit 130 by itself", "exit 130", 130, 0},
		{"killed by SIGTERM", "kill -TERM $$", 128 + int(syscall.SIGTERM), syscall.SIGTERM},
		{"killed by SIGKILL", "kill -KILL $$", 128 + int(syscall.SIGKILL), syscall.SIGKILL},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := proctest.Start(t, exec.Command("sh", "-c", tt.script))
			if code := p.Wait(t, 30*time.Second); code != tt.code || p.KilledBy() != tt.killedBy {
				t.Errorf("exit %d, killed by %v; want %d, killed by %v", code, p.KilledBy(), tt.code, tt.killedBy)
			}
		})
	}
}

// Start captures stdout and stderr apart where the command sets neither.
func TestStartCapturesOutput(t *testing.T) {
	t.Parallel()
	p := proctest.Start(t, exec.Command("sh", "-c", "echo out; echo err >&2"))
	if code := p.Wait(t, 30*time.Second); code != 0 {
		t.Fatalf("exit %d, want 0", code)
	}
	if p.Stdout.String() != "out\n" || p.Stderr.String() != "err\n" {
		t.Errorf("stdout %q, stderr %q; want \"out\\n\" and \"err\\n\"", p.Stdout.String(), p.Stderr.String())
	}
}

// A process still running when its test ends is killed and reaped, also
// when the test stopped it with SIGSTOP.
func TestStartKillsWhatOutlivesTheTest(t *testing.T) {
	t.Parallel()
	var p *proctest.Process
	t.Run("stopped", func(t *testing.T) {
		p = proctest.Start(t, exec.Command("sleep", "600"))
		p.Signal(t, syscall.SIGSTOP)
	})
	if !p.Exited() || p.KilledBy() != syscall.SIGKILL {
		t.Errorf("after its test: exited %v, killed by %v; want killed by SIGKILL and reaped", p.Exited(), p.KilledBy())
	}
	if !proctest.ProcessGone(p.PID()) {
		t.Errorf("pid %d still there after its test", p.PID())
	}
}
