package demo

import (
	"context"
	"fmt"

	"github.com/leasetop/leasetop/internal/audit"
	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/demo/device"
)

// killAfterReceiptWithin: when a holder reports it received a message and
// the chaos schedule's next action is a kill due within this many TTLs
// (and before the demo's end), the kill comes now, at that holder: the
// message it has not acknowledged yet goes to the next holder.
const killAfterReceiptWithin = 2

// onInboxReport handles a report of the account limits and the inbox and
// reports whether rep was one.
func (r *runner) onInboxReport(ctx context.Context, p *proc, key data.Key, rep device.Report) bool {
	switch {
	case rep.Kind == device.ReportRefused && rep.Slots > 0:
		r.rec.Refusals++
		r.emit("at limit", fmt.Sprintf("%s  %s pressed send: the conversation is free, but account %s is at its limit (%d/%d live runs)",
			clean(key.String()), p, clean(key.Account), rep.Used, rep.Slots))
	case rep.Kind == device.ReportSent:
		r.emit("sent", fmt.Sprintf("%s  %s found it busy and sends a %s to %s's run %s (message %d)",
			clean(key.String()), p, clean(string(rep.Message)), clean(rep.Holder), short(rep.OwnerRun), rep.MessageID))
	case rep.Kind == device.ReportLanded: // the history's message events say it
	case rep.Kind == device.ReportReceived:
		r.emit("received", fmt.Sprintf("%s  %s run %s received a %s from %s (message %d); it acknowledges it after its next step",
			clean(key.String()), p, short(rep.Run), clean(string(rep.Message)), clean(rep.Holder), rep.MessageID))
		r.killAfterReceipt(ctx, key)
	case rep.Kind == device.ReportAcked:
		r.rec.Acked[rep.MessageID] = append(r.rec.Acked[rep.MessageID], audit.AckedMessage{Key: key, Run: rep.Run, Holder: p.label})
	case rep.Kind == device.ReportEnded && rep.Cancelled:
		delete(r.active, rep.Run)
		r.rec.Ended[rep.Run] = rep.How
		r.emit("cancelled", fmt.Sprintf("%s  %s stopped run %s (fence %d): a cancel from %s; it released the conversation",
			clean(key.String()), p, short(rep.Run), rep.Fence, clean(rep.Holder)))
	default:
		return false
	}
	return true
}

// killAfterReceipt brings the schedule's next kill forward to the holder
// of key, which has just received a message, when that kill is due soon,
// and within the demo's duration: the schedule's kills stay the same, only
// earlier.
func (r *runner) killAfterReceipt(ctx context.Context, key data.Key) {
	if r.cfg.NoChaos || r.stopping || r.next.Kind != ActKill ||
		r.next.At-r.elapsed() > killAfterReceiptWithin*r.cfg.TTL ||
		(r.cfg.Duration > 0 && r.next.At >= r.cfg.Duration) {
		return
	}
	if _, err := r.act(ctx, ActKill, 0, &key, forceReason); err == nil {
		r.emit("chaos", fmt.Sprintf("%s  the kill came right after its holder received a message: the next holder gets it", clean(key.String())))
		r.next = r.sched.Next()
	}
}
