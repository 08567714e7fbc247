package faults_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/monitortest"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/internal/testkit/proctest"
	"github.com/leasetop/leasetop/monitor"
)

// proc is one process a fault test started (proctest.Start).
type proc struct{ *proctest.Process }

// leasetopRun starts `leasetop run` on the rig's first session through the
// database URL dsn, labelled holder, with this test binary as its command:
// a fenced writer on the rig's database (directly). The process is killed
// when the test ends if it still runs.
func (r *rig) leasetopRun(dsn, holder string, flags ...string) *proc {
	r.t.Helper()
	return r.leasetopRunOn(dsn, r.keys[0], holder, nil, flags...)
}

// leasetopRunOn is leasetopRun on session key, with env added to its
// command's environment (writerFor).
func (r *rig) leasetopRunOn(dsn string, key data.Key, holder string, env []string, flags ...string) *proc {
	r.t.Helper()
	args := append([]string{"run", "--dsn", dsn, "--account", key.Account, "--session", key.Session,
		"--holder", holder}, flags...)
	cmd := exec.Command(leasetopBin, append(append(args, "--"), os.Args[0])...)
	cmd.Env = append(append(os.Environ(), writerEnv(r.url, holder)...), env...)
	return startProc(r.t, cmd)
}

// startProc starts cmd, its output captured where it sets none, and waits
// for it in the background. The process is killed when the test ends if it
// still runs.
func startProc(t *testing.T, cmd *exec.Cmd) *proc {
	t.Helper()
	return &proc{proctest.Start(t, cmd)}
}

// wait waits for the process to exit and returns its exit code (128+N for
// signal N).
func (p *proc) wait(t *testing.T) int {
	t.Helper()
	return p.Wait(t, 30*time.Second)
}

// holding waits until the monitor shows holder holding the rig's first
// session, and returns that lease.
func (r *rig) holding(m *monitortest.Mirror, holder string) data.Lease {
	r.t.Helper()
	var l data.Lease
	waitMirror(r.t, m, 30*time.Second, "the monitor to show "+holder+" holding the session", func(s *monitor.State) bool {
		var ok bool
		l, ok = s.Lease(r.keys[0])
		return ok && l.Holder == holder
	})
	return l
}

// takeover returns the event in which the rig's first session was taken
// over from run.
func (r *rig) takeover(from data.Lease) data.Event {
	r.t.Helper()
	for _, ev := range r.events() {
		if ev.Kind == data.KindTakenOver && ev.PrevRunID == from.RunID {
			return ev
		}
	}
	r.t.Fatalf("no takeover from run %v in lease.event", from.RunID)
	return data.Event{}
}

// writes counts holder's writes that the fence check accepted or refused.
func (r *rig) writes(holder string, accepted bool) int {
	r.t.Helper()
	var n int
	if err := r.store.Pool().QueryRow(context.Background(),
		`SELECT count(*) FROM leasetop_demo.output WHERE device = $1 AND accepted = $2`, holder, accepted).Scan(&n); err != nil {
		r.t.Fatal(err)
	}
	return n
}

// writing waits until holder's command has made an accepted write: it runs
// and handles SIGTERM.
func (r *rig) writing(holder string) {
	r.t.Helper()
	pgtest.Eventually(r.t, 30*time.Second, holder+"'s command to write", func() bool { return r.writes(holder, true) > 0 })
}

// commandPID returns the pid of holder's command, a writer, from the
// application_name of its connections to the rig's database.
func (r *rig) commandPID(holder string) int {
	r.t.Helper()
	var name string
	if err := r.store.Pool().QueryRow(context.Background(), `SELECT application_name FROM pg_stat_activity
		WHERE datname = current_database() AND application_name LIKE $1 LIMIT 1`, writerAppName+" "+holder+" %").Scan(&name); err != nil {
		r.t.Fatalf("%s's command's connection: %v", holder, err)
	}
	pid, err := strconv.Atoi(name[strings.LastIndexByte(name, ' ')+1:])
	if err != nil {
		r.t.Fatalf("%s's command's application_name %q: %v", holder, name, err)
	}
	return pid
}

// exited reports whether process pid has ended: no such process, or a
// zombie its parent has not reaped yet.
func exited(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return errors.Is(err, os.ErrNotExist)
	}
	// pid (comm) state ...: comm may hold spaces and parentheses.
	rest := stat[bytes.LastIndexByte(stat, ')')+1:]
	return len(rest) > 1 && rest[1] == 'Z'
}

// Fault 7a: a `leasetop run` holder is killed with SIGKILL while another
// waits. Its command dies with it; the waiting run takes the session over
// after the lease expires on the server clock, not before; the monitor
// shows the new holder, and the audit finds one owner at a time.
func TestHolderProcessKilled(t *testing.T) {
	r := newRig(t, 1)
	m := r.startMirror(r.url, mirrorCfg())
	a := r.leasetopRun(r.url, "proc-a", "--ttl", "1s")
	first := r.holding(m, "proc-a")
	r.writing("proc-a")
	command := r.commandPID("proc-a")
	b := r.leasetopRun(r.url, "proc-b", "--ttl", "1s", "--wait")
	pgtest.Eventually(t, 30*time.Second, "proc-b to wait", func() bool { return strings.Contains(b.Stderr.String(), "waiting") })

	if exited(command) {
		t.Fatalf("proc-a's command (pid %d) ended before proc-a was killed", command)
	}
	t.Cleanup(func() { // a command that outlived its holder holds the test's pipes
		if !exited(command) {
			_ = syscall.Kill(command, syscall.SIGKILL)
		}
	})
	a.Signal(t, syscall.SIGKILL)
	killed := time.Now()
	r.killed("proc-a")
	pgtest.Eventually(t, 30*time.Second, fmt.Sprintf("proc-a's command (pid %d) to die with it", command), func() bool { return exited(command) })
	if got := a.wait(t); got != 128+9 {
		t.Errorf("killed holder exit = %d, want 137", got)
	}
	second := r.holding(m, "proc-b")
	shown := time.Since(killed)
	over := r.takeover(first)
	if over.RunID != second.RunID || over.At.Before(over.PrevExpiresAt) || second.Fence <= first.Fence {
		t.Errorf("takeover %+v: want proc-b's run %v, after the expiry, with a fence above %d", over, second.RunID, first.Fence)
	}
	r.writing("proc-b")
	b.Signal(t, syscall.SIGTERM)
	if got := b.wait(t); got != 0 {
		t.Errorf("proc-b exit after SIGTERM = %d, want 0 (its writer exits 0); stderr: %s", got, b.Stderr.String())
	}
	tally := r.audit(m)
	report(t, "holder-kill9", append([]any{"ttl", time.Second, "taken_over_after_expiry_by", over.At.Sub(over.PrevExpiresAt),
		"monitor_showed_new_holder_in", shown}, tallyKV(tally)...)...)
}

// Fault 7b: a `leasetop run` holder is frozen with SIGSTOP past its TTL while
// its command keeps running. The waiting run takes over after the expiry;
// the frozen holder's command's writes are refused by the fence check from
// then on; on SIGCONT the holder finds its local deadline passed, stops its
// command and exits 4. The monitor follows, and the audit finds no accepted
// stale write.
func TestHolderProcessFrozen(t *testing.T) {
	r := newRig(t, 1)
	m := r.startMirror(r.url, mirrorCfg())
	a := r.leasetopRun(r.url, "proc-a", "--ttl", "1s")
	first := r.holding(m, "proc-a")
	r.writing("proc-a")
	b := r.leasetopRun(r.url, "proc-b", "--ttl", "1s", "--wait")
	pgtest.Eventually(t, 30*time.Second, "proc-b to wait", func() bool { return strings.Contains(b.Stderr.String(), "waiting") })

	a.Signal(t, syscall.SIGSTOP)
	frozen := time.Now()
	second := r.holding(m, "proc-b")
	shown := time.Since(frozen)
	pgtest.Eventually(t, 30*time.Second, "the frozen holder's command to be refused", func() bool { return r.writes("proc-a", false) > 0 })
	a.Signal(t, syscall.SIGCONT)
	if got := a.wait(t); got != 4 {
		t.Errorf("frozen holder exit after SIGCONT = %d, want 4 (lost); stderr: %s", got, a.Stderr.String())
	}
	over := r.takeover(first)
	if over.RunID != second.RunID || over.At.Before(over.PrevExpiresAt) || second.Fence <= first.Fence {
		t.Errorf("takeover %+v: want proc-b's run %v, after the expiry, with a fence above %d", over, second.RunID, first.Fence)
	}
	r.writing("proc-b")
	b.Signal(t, syscall.SIGTERM)
	if got := b.wait(t); got != 0 {
		t.Errorf("proc-b exit after SIGTERM = %d, want 0; stderr: %s", got, b.Stderr.String())
	}
	tally := r.audit(m)
	if tally.StaleWritesRefused == 0 {
		t.Error("no stale write was refused; want the frozen holder's command refused")
	}
	report(t, "holder-sigstop", append([]any{"ttl", time.Second, "taken_over_after_expiry_by", over.At.Sub(over.PrevExpiresAt),
		"monitor_showed_new_holder_in", shown}, tallyKV(tally)...)...)
}
