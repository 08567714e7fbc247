package demo_test

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/demo"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/monitor"
)

// TestDeviceReportsThroughTheDatabase: a real device process keeps what it
// believes in leasetop_demo.device and what it asked in
// leasetop_demo.attempt, where the monitor reads them: refused while the
// test holds its conversation (with the test's holder label and time
// left), holding once the test lets go (with the run and fence the server
// granted), stopped after SIGTERM; its attempts carry the server's answers.
func TestDeviceReportsThroughTheDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	store := db.Store(t)
	if _, err := demo.Setup(ctx, store); err != nil {
		t.Fatal(err)
	}
	key := data.Key{Account: "acme", Session: "chat-1"}
	ours := uuid.New()
	if _, err := store.Acquire(ctx, key, ours, time.Minute, "the test"); err != nil {
		t.Fatal(err)
	}
	p := startLeasetop(t, "device", "--name", "phone", "--account", "acme", "--sessions", "chat-1", "--ttl", "1s", "--seed", "7",
		"--strategy", "refuse", "--dsn", db.URL) // refused, not preempting, joining or queueing
	pid := p.cmd.Process.Pid

	var dev monitor.Device
	read := func() bool {
		devs, err := demo.ReadDevices(ctx, store, []string{"acme"}, false)
		if err != nil {
			t.Fatalf("ReadDevices: %v", err)
		}
		if len(devs) != 1 {
			return false
		}
		dev = devs[0]
		return true
	}
	pgtest.Eventually(t, 20*time.Second, "the device reports that the test holds chat-1", func() bool {
		return read() && dev.State == monitor.DeviceRefused
	})
	if dev.PID != pid || dev.Name != "phone" || dev.Owner != "the test" || dev.Refusals < 1 || len(dev.Believes) != 0 {
		t.Errorf("refused device = %+v; want pid %d, owner %q, a refusal, no beliefs", dev, pid, "the test")
	}
	if left := time.Until(dev.OwnerExpires); left < 30*time.Second || left > time.Minute {
		t.Errorf("the refusal says the test's lease has %s left, want about a minute", left)
	}

	if ok, err := store.Release(ctx, key, ours); err != nil || !ok {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	pgtest.Eventually(t, 20*time.Second, "the device reports that it holds chat-1", func() bool {
		return read() && dev.State == monitor.DeviceHolding
	})
	l, _, held, err := store.Lease(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if len(dev.Believes) != 1 || !held || dev.Believes[0].Run != l.RunID || dev.Believes[0].Fence != l.Fence || l.Holder != dev.Holder {
		t.Errorf("the device believes %+v; the server says %+v (held %v)", dev.Believes, l, held)
	}
	attempts, err := demo.ReadAttempts(ctx, store, "acme", "phone", 100)
	if err != nil {
		t.Fatal(err)
	}
	var refused, granted bool
	for _, a := range attempts {
		refused = refused || (!a.OK && a.PID == pid && strings.Contains(a.Answer, "busy: the test has it"))
		granted = granted || (a.OK && a.Key == key && strings.HasPrefix(a.Answer, "grant"))
	}
	if !refused || !granted {
		t.Errorf("attempts %+v: want the refusal naming the test and the grant", attempts)
	}

	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(30 * time.Second); code != 0 {
		t.Fatalf("device exited %d after SIGTERM, want 0; stderr %s", code, p.stderr.String())
	}
	read()
	if dev.State != monitor.DeviceStopped || len(dev.Believes) != 0 {
		t.Errorf("after SIGTERM the device reads as %s believing %v; want stopped, believing nothing", dev.State, dev.Believes)
	}
}
