package ui

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

// TestDeviceTextLimitsAndMessages: a device refused or waiting because its
// account is at its limit says so with the slots, not a conversation's
// holder; a cancelled run names who cancelled it; the last message sent
// says where it landed, carried or not.
func TestDeviceTextLimitsAndMessages(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	run := uuid.MustParse("1c151d47-0000-4000-8000-000000000000")
	key := data.Key{Account: "acme", Session: "chat-2"}
	sent := func(where data.MessageState, carried bool) *monitor.SentMessage {
		return &monitor.SentMessage{Key: key, Kind: data.MessageSteer, ID: 3, To: "phone pid 7", Where: where, Run: run, Carried: carried}
	}
	tests := []struct {
		name      string
		d         monitor.Device
		state     string
		sentWords string
	}{
		{"waiting for the account", monitor.Device{Account: "acme", State: monitor.DeviceWaiting, Since: now.Add(-1200 * time.Millisecond),
			Key: key, AccountSlots: 1, AccountUsed: 1}, "waiting 1.2s for account acme (1/1): chat-2", ""},
		{"refused at the limit", monitor.Device{Account: "globex", State: monitor.DeviceRefused, Key: data.Key{Account: "globex", Session: "chat-4"},
			AccountSlots: 3, AccountUsed: 3}, "refused chat-4: account globex (3/3) at its limit", ""},
		{"waiting for the conversation", monitor.Device{Account: "acme", State: monitor.DeviceWaiting, Since: now.Add(-time.Second), Key: key,
			Owner: "phone pid 7"}, "waiting 1.0s for chat-2: phone pid 7", ""},
		{"cancelled", monitor.Device{Account: "acme", State: monitor.DeviceCancelled, Key: key, Run: run, Owner: "browser pid 9"},
			"cancelled by browser pid 9: chat-2 run 1c151d47", ""},
		{"sent, waiting", monitor.Device{Account: "acme", State: monitor.DeviceIdle, Sent: sent(data.MessageWaiting, false)}, "idle", "steer chat-2 → waiting for a run"},
		{"delivered", monitor.Device{Account: "acme", State: monitor.DeviceIdle, Sent: sent(data.MessageDelivered, false)}, "idle", "steer chat-2 → delivered to 1c151d47"},
		{"carried", monitor.Device{Account: "acme", State: monitor.DeviceIdle, Sent: sent(data.MessageDelivered, true)}, "idle", "steer chat-2 → carried to 1c151d47"},
		{"acked after a carry", monitor.Device{Account: "acme", State: monitor.DeviceIdle, Sent: sent(data.MessageAcked, true)}, "idle", "steer chat-2 → acked by 1c151d47 (carried)"},
		{"expired", monitor.Device{Account: "acme", State: monitor.DeviceIdle, Sent: sent(data.MessageExpired, false)}, "idle", "steer chat-2 → expired"},
	}
	for _, tt := range tests {
		if got, _ := stateText(&tt.d, now); got != tt.state {
			t.Errorf("%s: stateText = %q, want %q", tt.name, got, tt.state)
		}
		if got, _ := sentText(&tt.d); got != tt.sentWords {
			t.Errorf("%s: sentText = %q, want %q", tt.name, got, tt.sentWords)
		}
	}
}
