package lease

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
)

// A waiter for its account's slots (subscribeAccount: the account's key,
// no session) is handed the events of every session of that account, and
// of no other account.
func TestDeliverReachesTheAccountsWaiter(t *testing.T) {
	t.Parallel()
	n := &notifier{subs: map[Key]map[*subscription]struct{}{}}
	var got []data.Event
	s := &subscription{key: Key{Account: "acme"}, fn: func(no notice) { got = append(got, no.ev) }}
	n.subs[s.key] = map[*subscription]struct{}{s: {}}
	n.deliver([]data.Event{
		{ID: 1, Kind: data.KindReleased, Key: Key{Account: "acme", Session: "chat-1"}},
		{ID: 2, Kind: data.KindReleased, Key: Key{Account: "other", Session: "chat-1"}},
		{ID: 3, Kind: data.KindTakenOver, Key: Key{Account: "acme", Session: "chat-2"}},
	})
	if len(got) != 2 || got[0].ID != 1 || got[1].ID != 3 {
		t.Fatalf("the account's waiter got %+v, want events 1 and 3", got)
	}
}

// A waiter refused by a full account sleeps until the soonest slot
// holder's lease ends (then a few milliseconds), or PollInterval.
func TestRetryDelayAtLimit(t *testing.T) {
	t.Parallel()
	c := &Client{cfg: Config{PollInterval: 2 * time.Second}}
	full := &data.LimitError{Slots: 2, Holders: []data.SlotHolder{
		{RunID: uuid.New(), Remaining: 5 * time.Second}, {RunID: uuid.New(), Remaining: 300 * time.Millisecond}}}
	b := backoff{failures: 3}
	d, retry := c.retryDelay(full, &b)
	if lo, hi := 300*time.Millisecond+expiryDelay, 300*time.Millisecond+expiryDelay+expiryJitter; !retry || d < lo || d > hi || b.failures != 0 {
		t.Fatalf("retryDelay(at limit) = %v, %v (failures %d); want a retry in [%v, %v], failures reset", d, retry, b.failures, lo, hi)
	}
}
