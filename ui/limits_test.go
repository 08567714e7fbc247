package ui

import (
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

// TestLimitsReadOnlyWhileThereAreLimits: the monitor reads the limits at
// its first tick; while the last read found none it does not read them
// again, tick after tick, until a limit_set event arrives (or the accounts
// view opens); while there are limits it reads them every queuePollEvery.
func TestLimitsReadOnlyWhileThereAreLimits(t *testing.T) {
	t.Parallel()
	reads := 0
	var limits []AccountLimit
	m, clock := newModel(t, 120, 30, func(c *Config) {
		c.Source.LimitsFunc = func() ([]AccountLimit, error) { reads++; return limits, nil }
	})
	apply(m, syncBatch(nil, nil))
	tick := func() {
		clock.Advance(queuePollEvery + time.Millisecond)
		drain(m, m.onTick())
	}
	tick()
	if reads != 1 {
		t.Fatalf("after the first tick: %d reads of the limits, want 1", reads)
	}
	for range 5 {
		tick()
	}
	if reads != 1 {
		t.Fatalf("five ticks with no limit: %d reads, want still 1", reads)
	}
	limits = []AccountLimit{{LimitUsage: data.LimitUsage{Account: "acme", Slots: 1, Used: 1,
		Holders: []data.SlotHolder{{Slot: 1, Session: "chat-1"}}}}}
	ev := data.Event{ID: 1, Kind: data.KindLimitSet, At: server, Key: data.Key{Account: "acme"}, Reason: "1 slot", Actor: "ops"}
	apply(m, monitor.Batch{Items: []monitor.Item{{Event: &ev, At: base}}, Conn: data.ListenerState{Status: data.ListenerLive}})
	tick()
	if reads != 2 || m.limits.slotOf(monitor.Key{Key: data.Key{Account: "acme", Session: "chat-1"}}) != "1" {
		t.Fatalf("after a limit_set: %d reads, slot of acme/chat-1 %q; want 2 and \"1\"", reads, m.limits.slotOf(monitor.Key{Key: data.Key{Account: "acme", Session: "chat-1"}}))
	}
	tick()
	tick()
	if reads != 4 {
		t.Fatalf("two ticks with a limit: %d reads, want 4", reads)
	}
}
