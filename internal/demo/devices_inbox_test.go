package demo_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/demo"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/monitor"
)

// TestDeviceSteersTheRunInProgress: a device whose user finds the
// conversation busy with the steer strategy sends the test's run a steer
// instead of starting a run; the test's run receives it and acknowledges
// it, and the device's row says where its message landed: acked by the
// test's run. The lease does not change hands.
func TestDeviceSteersTheRunInProgress(t *testing.T) {
	t.Parallel()
	store, ours, read := busyDevice(t, "steer", data.AcquireOptions{})
	ctx := context.Background()
	key := data.Key{Account: "acme", Session: "chat-1"}
	var got []data.Message
	pgtest.Eventually(t, 20*time.Second, "the test's run receives the device's steer", func() bool {
		ms, err := store.ReceiveMessages(ctx, key, ours.RunID, 0, data.MaxReceive)
		if err != nil {
			t.Fatalf("ReceiveMessages = %v", err)
		}
		got = ms
		return len(ms) > 0
	})
	m := got[0]
	if m.Kind != data.MessageSteer || !strings.HasPrefix(m.Sender, "phone pid ") || !strings.HasPrefix(m.Body, "also check") && !strings.HasPrefix(m.Body, "and ") {
		t.Errorf("received %+v; want a steer from the phone", m)
	}
	if out, err := store.AckMessage(ctx, key, ours.RunID, m.ID); err != nil || out != data.AckDone {
		t.Fatalf("AckMessage = %v, %v; want acked", out, err)
	}
	var dev monitor.Device
	pgtest.Eventually(t, 20*time.Second, "the device's row says its steer was acked by the test's run", func() bool {
		dev = read()
		return dev.Sent != nil && dev.Sent.ID == m.ID && dev.Sent.Where == data.MessageAcked
	})
	if dev.Sent.Run != data.PublicRunID(ours.RunID) || dev.Sent.Carried || dev.Sent.To != "the test" || dev.Sent.Kind != data.MessageSteer {
		t.Errorf("the device's last message = %+v; want a steer to the test, acked by its run %s", *dev.Sent, data.PublicRunID(ours.RunID))
	}
	l, _, ok, err := store.Lease(ctx, key)
	if err != nil || !ok || l.RunID != data.PublicRunID(ours.RunID) {
		t.Errorf("the server says %+v (held %v, %v); want the test's run still holding", l, ok, err)
	}
}

// TestDeviceWaitsForItsAccountNotItsConversation: acme may have 1 live
// run, and the test's run of chat-2 holds it: the device's chat-1 is free,
// but it is refused and waits for its account, and its row says so (1 of 1
// slots), not that a holder has chat-1. Once the test releases chat-2 the
// device gets chat-1.
func TestDeviceWaitsForItsAccountNotItsConversation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	store := db.Store(t)
	if _, err := demo.Setup(ctx, store); err != nil {
		t.Fatal(err)
	}
	if err := demo.SetLimits(ctx, store, demo.Config{Accounts: 1, Limits: []int{1}}); err != nil {
		t.Fatalf("SetLimits = %v", err)
	}
	other := data.Key{Account: "acme", Session: "chat-2"}
	ours := uuid.New()
	if _, err := store.Acquire(ctx, other, ours, time.Minute, "the test"); err != nil {
		t.Fatal(err)
	}
	startLeasetop(t, "device", "--name", "phone", "--account", "acme", "--sessions", "chat-1", "--ttl", "1s", "--seed", "7",
		"--strategy", "wait", "--dsn", db.URL)
	read := func() monitor.Device {
		devs, err := demo.ReadDevices(ctx, store, []string{"acme"}, false)
		if err != nil || len(devs) != 1 {
			return monitor.Device{}
		}
		return devs[0]
	}
	var dev monitor.Device
	pgtest.Eventually(t, 20*time.Second, "the device waits for its account", func() bool {
		dev = read()
		return dev.State == monitor.DeviceWaiting
	})
	if dev.AccountSlots != 1 || dev.AccountUsed != 1 || dev.Owner != "" || dev.Key.Session != "chat-1" {
		t.Errorf("waiting device = %+v; want chat-1 waiting for its account, 1 of 1 slots, no holder of chat-1", dev)
	}
	if ok, err := store.Release(ctx, other, ours); err != nil || !ok {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	pgtest.Eventually(t, 20*time.Second, "the device gets chat-1 once the account's slot is free", func() bool {
		dev = read()
		return dev.State == monitor.DeviceHolding && dev.Key.Session == "chat-1"
	})
}

// TestDeviceAcknowledgesSteersAndStopsOnCancel: a device holding its
// conversation reads its messages: a steer the test sends is acknowledged
// by the device's run under its fence, and a cancel stops the run it
// reaches: acknowledged by that run, which then releases and writes no
// accepted output after the cancel (but the step in flight).
func TestDeviceAcknowledgesSteersAndStopsOnCancel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	store := db.Store(t)
	if _, err := demo.Setup(ctx, store); err != nil {
		t.Fatal(err)
	}
	key := data.Key{Account: "acme", Session: "chat-1"}
	startLeasetop(t, "device", "--name", "desktop", "--account", "acme", "--sessions", "chat-1", "--ttl", "2s", "--seed", "7",
		"--strategy", "refuse", "--dsn", db.URL)
	send := func(kind data.MessageKind, body, idem string) int64 {
		st, err := store.SendMessage(ctx, key, kind, body, "the test", idem, time.Minute)
		if err != nil {
			t.Fatalf("SendMessage(%s) = %v", kind, err)
		}
		return st.ID
	}
	events := func() []data.Event {
		var out []data.Event
		for ev, err := range store.Events(ctx, 0) {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, ev)
		}
		return out
	}
	acked := func(id int64) (data.Event, bool) {
		for _, ev := range events() {
			if ev.Kind == data.KindMessageAcked && ev.MessageID == id {
				return ev, true
			}
		}
		return data.Event{}, false
	}
	steer := send(data.MessageSteer, "also check the March invoices", "steer-1")
	var ack data.Event
	pgtest.Eventually(t, 30*time.Second, "a run of the device acknowledges the steer", func() (ok bool) {
		ack, ok = acked(steer)
		return ok
	})
	if !strings.HasPrefix(ack.Holder, "the test") || ack.Fence == 0 {
		t.Errorf("message_acked = %+v; want the test's steer acknowledged under a fence", ack)
	}
	cancel := send(data.MessageCancel, "stop", "cancel-1")
	pgtest.Eventually(t, 30*time.Second, "a run of the device acknowledges the cancel", func() (ok bool) {
		ack, ok = acked(cancel)
		return ok
	})
	pgtest.Eventually(t, 30*time.Second, "the cancelled run releases", func() bool {
		return slices.ContainsFunc(events(), func(ev data.Event) bool {
			return ev.Kind == data.KindReleased && ev.RunID == ack.RunID && ev.ID > ack.ID
		})
	})
	var late int
	if err := store.Pool().QueryRow(ctx, `SELECT count(*) FROM leasetop_demo.output WHERE run_id = $1 AND accepted AND tx_started_at > $2`,
		ack.RunID, ack.At).Scan(&late); err != nil {
		t.Fatal(err)
	}
	if late > 1 { // the chunk whose write began between the acknowledgement and the Context's end
		t.Errorf("the cancelled run %s made %d accepted writes after the cancel; want at most the one in flight", ack.RunID, late)
	}
}
