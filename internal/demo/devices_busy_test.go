package demo_test

import (
	"context"
	"github.com/leasetop/leasetop/internal/demo/device"
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

// busyDevice starts a real device process with one busy strategy on a
// fresh database where the test holds acme/chat-1 with opt, and returns
// the store, the test's run and a function that reads the device's row.
func busyDevice(t *testing.T, strategy string, opt data.AcquireOptions) (*data.Store, data.Grant, func() monitor.Device) {
	t.Helper()
	store, g, read, _ := busyDeviceProc(t, strategy, opt)
	return store, g, read
}

// busyDeviceProc is busyDevice, with the device's process.
func busyDeviceProc(t *testing.T, strategy string, opt data.AcquireOptions) (*data.Store, data.Grant, func() monitor.Device, *demoProc) {
	t.Helper()
	ctx := context.Background()
	db := pgtest.New(t)
	store := db.Store(t)
	if _, err := demo.Setup(ctx, store); err != nil {
		t.Fatal(err)
	}
	key := data.Key{Account: "acme", Session: "chat-1"}
	g, err := store.AcquireWith(ctx, key, uuid.New(), time.Minute, "the test", opt)
	if err != nil {
		t.Fatal(err)
	}
	p := startLeasetop(t, "device", "--name", "phone", "--account", "acme", "--sessions", "chat-1", "--ttl", "1s", "--seed", "7",
		"--strategy", strategy, "--dsn", db.URL)
	return store, g, func() monitor.Device {
		devs, err := demo.ReadDevices(ctx, store, []string{"acme"}, false)
		if err != nil {
			t.Fatalf("ReadDevices: %v", err)
		}
		if len(devs) != 1 {
			return monitor.Device{}
		}
		return devs[0]
	}, p
}

// TestDevicePreemptsTheRunInProgress: a device whose user sends a new
// message while the test's run holds the conversation preempts it: the
// server gives the device the conversation with a higher fence, the
// history names both runs, and the device counts the preempt and says whom
// it stopped.
func TestDevicePreemptsTheRunInProgress(t *testing.T) {
	t.Parallel()
	store, ours, read := busyDevice(t, "preempt", data.AcquireOptions{})
	key := data.Key{Account: "acme", Session: "chat-1"}
	var dev monitor.Device
	pgtest.Eventually(t, 20*time.Second, "the device holds chat-1 after preempting the test", func() bool {
		dev = read()
		return dev.State == monitor.DeviceHolding && dev.Preempts >= 1
	})
	if dev.Why != "preempted the test" {
		t.Errorf("the holding device's note = %q, want %q", dev.Why, "preempted the test")
	}
	var preempted bool
	for ev, err := range store.Events(context.Background(), 0) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == data.KindPreempted && ev.Key == key && ev.PrevRunID == data.PublicRunID(ours.RunID) && ev.Fence > ours.Fence &&
			ev.PrevHolder == "the test" && strings.HasPrefix(ev.Holder, "phone pid ") && ev.Reason == "a new message" {
			preempted = true
		}
	}
	if !preempted {
		t.Error("no preempted event of the test's run by the device, with a higher fence and the reason")
	}
}

// TestDevicePreemptRefusedByAPayingRunQueues: the test's run is paying (not
// preemptible): the device's preempt is refused, its row says so, and it
// queues for the conversation, with a ticket in the queue.
func TestDevicePreemptRefusedByAPayingRunQueues(t *testing.T) {
	t.Parallel()
	store, _, read := busyDevice(t, "preempt,queue", data.AcquireOptions{NotPreemptible: true})
	key := data.Key{Account: "acme", Session: "chat-1"}
	var dev monitor.Device
	pgtest.Eventually(t, 20*time.Second, "the device queued after its preempt was refused", func() bool {
		dev = read()
		return dev.State == monitor.DeviceQueued && dev.Why == "paying"
	})
	if dev.Owner != "the test" || dev.Place != 1 || dev.Refusals < 1 || dev.QueueWaits < 1 {
		t.Errorf("queued device = %+v; want owner the test, place 1, a refusal, a queue wait", dev)
	}
	l, _, ok, err := store.Lease(context.Background(), key)
	if err != nil || !ok || l.Holder != "the test" {
		t.Errorf("the server says %+v (held %v, %v); want the paying run still holding", l, ok, err)
	}
}

// TestDeviceJoinsTheRunInProgress: a device that finds the conversation
// busy follows the running run instead of starting one: its row names the
// holder, the run and the attachment the run published (its stream); the
// lease does not change hands.
func TestDeviceJoinsTheRunInProgress(t *testing.T) {
	t.Parallel()
	store, ours, read := busyDevice(t, "join", data.AcquireOptions{Attachment: "stream-of-the-test"})
	var dev monitor.Device
	pgtest.Eventually(t, 20*time.Second, "the device follows the test's run", func() bool {
		dev = read()
		return dev.State == monitor.DeviceFollowing
	})
	if dev.Owner != "the test" || dev.Run != data.PublicRunID(ours.RunID) || dev.Attachment != "stream-of-the-test" || dev.Joins < 1 || len(dev.Believes) != 0 {
		t.Errorf("following device = %+v; want the test's run %s and its stream, a join, no beliefs", dev, data.PublicRunID(ours.RunID))
	}
	l, _, ok, err := store.Lease(context.Background(), data.Key{Account: "acme", Session: "chat-1"})
	if err != nil || !ok || l.RunID != data.PublicRunID(ours.RunID) {
		t.Errorf("the server says %+v (held %v, %v); want the test's run still holding", l, ok, err)
	}
}

// TestDeviceSwitchesToTheNextMixOnSIGUSR1: the monitor's strategy key
// reaches a device as SIGUSR1. A device on the classic mix (refuse, wait) is
// refused by the test's run; after SIGUSR1 it uses the next mix (preempt,
// queue) and preempts it.
func TestDeviceSwitchesToTheNextMixOnSIGUSR1(t *testing.T) {
	t.Parallel()
	if got := device.NextMix(device.ClassicMix()).String(); got != "preempt,queue" {
		t.Fatalf("NextMix(classic) = %s, want preempt,queue (the test relies on it)", got)
	}
	store, ours, read, p := busyDeviceProc(t, "classic", data.AcquireOptions{})
	pgtest.Eventually(t, 20*time.Second, "the classic device refused or waiting", func() bool {
		st := read().State
		return st == monitor.DeviceRefused || st == monitor.DeviceWaiting
	})
	if l, _, ok, err := store.Lease(context.Background(), data.Key{Account: "acme", Session: "chat-1"}); err != nil || !ok || l.RunID != data.PublicRunID(ours.RunID) {
		t.Fatalf("before SIGUSR1 the server says %+v (%v, %v); want the test's run", l, ok, err)
	}
	if err := p.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	pgtest.Eventually(t, 20*time.Second, "the device preempts the test's run after SIGUSR1", func() bool {
		d := read()
		return d.State == monitor.DeviceHolding && d.Preempts >= 1
	})
}

// TestDeviceAskExpiresAndFallsBack: the test's run holds the conversation
// and never answers (a frozen holder: nothing reads its asks): the
// device's ask to hand over expires, the history records the ask and its
// expiry, and the device falls back to queueing, saying why.
func TestDeviceAskExpiresAndFallsBack(t *testing.T) {
	t.Parallel()
	store, ours, read := busyDevice(t, "ask,queue", data.AcquireOptions{})
	var dev monitor.Device
	pgtest.Eventually(t, 30*time.Second, "the device queued after its ask expired", func() bool {
		dev = read()
		return dev.State == monitor.DeviceQueued && dev.Why == "ask expired"
	})
	if dev.Owner != "the test" || dev.QueueWaits < 1 {
		t.Errorf("queued device = %+v; want owner the test and a queue wait", dev)
	}
	var asked, expired bool
	for ev, err := range store.Events(context.Background(), 0) {
		if err != nil {
			t.Fatal(err)
		}
		asked = asked || (ev.Kind == data.KindHandoverAsked && ev.PrevRunID == data.PublicRunID(ours.RunID))
		expired = expired || (ev.Kind == data.KindHandoverExpired && ev.PrevRunID == data.PublicRunID(ours.RunID))
	}
	if !asked || !expired {
		t.Errorf("history: ask recorded %v, expired %v; want both", asked, expired)
	}
}
