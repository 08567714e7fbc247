package demo

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

// onEvent shows one lease event of the demo's accounts, once.
func (r *runner) onEvent(ev data.Event) {
	if ev.ID == 0 || r.seen[ev.ID] || !r.scope[ev.Key.Account] {
		return
	}
	r.seen[ev.ID] = true
	if ev.Kind == data.KindLimitRefused {
		return // the device's "at limit" line says it, with the account's slots
	}
	tag, text := describe(ev)
	r.emit(tag, text)
}

// onBatch shows what the feed delivered, as the monitor reads it
// (monitor.Feed): the events a resync read, and the events read back from
// lease.event (a notification is only a claim; the feed acts on rows) or
// read there by the catch-up and poll mode. With resyncs set to false
// (stopping: catchUp shows what a resync would) only the others.
func (r *runner) onBatch(b monitor.Batch, resyncs bool) {
	for _, it := range b.Items {
		switch {
		case it.Event != nil:
			r.onEvent(*it.Event)
		case it.Sync != nil && resyncs:
			for _, ev := range it.Sync.Events {
				r.onEvent(ev)
			}
		}
	}
}

// describe turns a lease event into a line of the stream.
func describe(ev data.Event) (tag, text string) {
	key, holder := clean(ev.Key.String()), clean(ev.Holder)
	switch ev.Kind {
	case data.KindAcquired:
		return "acquired", fmt.Sprintf("%s  %s, fence %d", key, holder, ev.Fence)
	case data.KindTakenOver:
		return "taken over", fmt.Sprintf("%s  %s, fence %d, from run %s (fence %d, expired %s before)",
			key, holder, ev.Fence, short(ev.PrevRunID), ev.PrevFence, ev.At.Sub(ev.PrevExpiresAt).Round(time.Millisecond))
	case data.KindPreempted:
		s := fmt.Sprintf("%s  %s, fence %d, stopped run %s (%s, fence %d, %s left)", key, holder, ev.Fence,
			short(ev.PrevRunID), clean(ev.PrevHolder), ev.PrevFence, ev.PrevExpiresAt.Sub(ev.At).Round(time.Millisecond))
		if ev.Reason != "" {
			s += ": " + clean(ev.Reason)
		}
		return "PREEMPTED", s
	case data.KindQueueJoined:
		return "queued", fmt.Sprintf("%s  %s took a ticket (run %s)", key, holder, short(ev.RunID))
	case data.KindQueueLeft:
		return "queue left", fmt.Sprintf("%s  %s's ticket ended: %s", key, holder, clean(ev.Reason))
	case data.KindReleased:
		return "released", fmt.Sprintf("%s  %s, fence %d", key, holder, ev.Fence)
	case data.KindForceReleased:
		s := fmt.Sprintf("%s  %s, fence %d, by %s", key, holder, ev.Fence, clean(ev.Actor))
		if ev.Reason != "" {
			s += ": " + clean(ev.Reason)
		}
		return "force-released", s
	case data.KindRenewRejected:
		return "ZOMBIE", fmt.Sprintf("%s  renewal by run %s rejected (%s)", key, short(ev.RunID), clean(ev.Reason))
	case data.KindTruncated:
		return "truncated", "the lease table was truncated"
	case data.KindHandoverAsked:
		return "asked", fmt.Sprintf("%s  run %s (%s) asks run %s to hand over", key, short(ev.RunID), holder, short(ev.PrevRunID))
	case data.KindHandedOver:
		return "handed over", fmt.Sprintf("%s  %s, fence %d, from run %s (fence %d)", key, holder, ev.Fence, short(ev.PrevRunID), ev.PrevFence)
	case data.KindHandoverDeclined:
		return "declined", fmt.Sprintf("%s  run %s declined run %s's ask", key, short(ev.PrevRunID), short(ev.RunID))
	case data.KindHandoverExpired:
		return "ask expired", fmt.Sprintf("%s  run %s's ask (%s)", key, short(ev.RunID), clean(ev.Reason))
	case data.KindLimitRefused:
		return "limit refused", fmt.Sprintf("%s  run %s (%s): %s", key, short(ev.RunID), holder, clean(ev.Reason))
	case data.KindMessageSent:
		return "message sent", fmt.Sprintf("%s  %s %d from %s%s", key, clean(ev.Reason), ev.MessageID, holder, toRun(ev, "for run "))
	case data.KindMessageDelivered:
		return "delivered", fmt.Sprintf("%s  %s %d%s", key, clean(ev.Reason), ev.MessageID, toRun(ev, "to run "))
	case data.KindMessageCarried:
		return "carried", fmt.Sprintf("%s  %s %d from run %s (fence %d)%s", key, clean(ev.Reason), ev.MessageID, short(ev.PrevRunID), ev.PrevFence, toRun(ev, "to run "))
	case data.KindMessageAcked:
		return "acked", fmt.Sprintf("%s  %s %d%s", key, clean(ev.Reason), ev.MessageID, toRun(ev, "by run "))
	case data.KindMessageExpired:
		return "message expired", fmt.Sprintf("%s  %s %d from %s, unacknowledged", key, clean(ev.Reason), ev.MessageID, holder)
	}
	return string(ev.Kind), key
}

// toRun names the run an inbox event went to, with its fence, after
// prefix; "" when it went to none.
func toRun(ev data.Event, prefix string) string {
	if ev.RunID == uuid.Nil {
		return ""
	}
	return fmt.Sprintf(" %s %s (fence %d)", strings.TrimSpace(prefix), short(ev.RunID), ev.Fence)
}

// catchUp shows every event of the demo not shown yet, once the devices have
// stopped.
func (r *runner) catchUp(ctx context.Context) {
	for ev, err := range r.store.Events(ctx, r.rec.AfterEventID) {
		if err != nil {
			return
		}
		r.onEvent(ev)
	}
}
