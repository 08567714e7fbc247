package demo

import (
	"context"
	"fmt"
	"github.com/leasetop/leasetop/internal/demo/device"
	"strings"
	"time"

	"github.com/leasetop/leasetop/internal/audit"
	"github.com/leasetop/leasetop/internal/data"
)

// onProc handles what a device process did.
func (r *runner) onProc(ctx context.Context, m procMsg) {
	p := r.procs[m.idx]
	if m.gen != p.gen {
		return // an earlier generation's last words
	}
	switch {
	case m.report != nil:
		r.onReport(ctx, p, *m.report)
	case m.bad != nil:
		r.emit("device output", p.String()+": "+clean(m.bad.Error()))
	case m.exited:
		r.onExit(ctx, p, exitText(m.state, m.waitErr))
	default:
		p.lastErr = m.stderr
		r.emit("device stderr", p.String()+": "+clean(m.stderr))
	}
}

// onReport handles one report. What the database also records (grants,
// releases) is shown from the database's events, not from here.
func (r *runner) onReport(ctx context.Context, p *proc, rep device.Report) {
	key := p.key(rep.Session)
	if r.onInboxReport(ctx, p, key, rep) {
		return
	}
	switch rep.Kind {
	case device.ReportRefused:
		r.rec.Refusals++
		if strings.HasPrefix(rep.Cause, "ask ") {
			r.rec.FallbacksRun[p.label]++
		}
		r.emit("refused", fmt.Sprintf("%s  %s pressed send: busy, %s owns it for %s more",
			clean(key.String()), p, clean(rep.Holder), rep.Remaining.Round(100*time.Millisecond)))
	case device.ReportQueued, device.ReportPreempting:
		if strings.HasPrefix(rep.Cause, "ask ") {
			r.rec.FallbacksRun[p.label]++
		}
	case device.ReportPreemptRefused:
		r.rec.PreemptsRefused++
		r.emit("not preemptible", fmt.Sprintf("%s  %s sent a new message: preempt refused, %s is paying (not preemptible); it waits its turn",
			clean(key.String()), p, clean(rep.Holder)))
	case device.ReportAsking:
		r.emit("asking", fmt.Sprintf("%s  %s found it busy and asks %s to hand it over (continue on this device), %s to answer",
			clean(key.String()), p, clean(rep.Holder), rep.Remaining.Round(100*time.Millisecond)))
	case device.ReportAskEnded:
		if rep.How != device.EndHandedOver {
			r.rec.FallbacksChosen[p.label]++
			r.emit("ask "+clean(rep.How), fmt.Sprintf("%s  %s's ask to %s %s after %s; it falls back to %s",
				clean(key.String()), p, clean(rep.Holder), clean(rep.How), rep.Waited.Round(100*time.Millisecond), device.FallbackText(rep.Strategy)))
		}
	case device.ReportAnswered:
		r.emit("answered", fmt.Sprintf("%s  %s, asked by %s for run %s: %s", clean(key.String()), p, clean(rep.Holder), short(rep.Run), clean(rep.How)))
	case device.ReportFollowing:
		r.rec.Joins++
		r.emit("joined", fmt.Sprintf("%s  %s found it busy and follows %s's run %s (stream %s) instead of starting one",
			clean(key.String()), p, clean(rep.Holder), short(rep.OwnerRun), clean(rep.Attachment)))
	case device.ReportStarted:
		r.active[rep.Run] = &activeRun{run: rep.Run, key: key, fence: rep.Fence, proc: p}
		r.rec.Started[rep.Run] = audit.StartedRun{Key: key, Fence: rep.Fence, Holder: p.label}
	case device.ReportWrite:
		if !rep.Accepted {
			r.emit("write refused", fmt.Sprintf("%s  %s wrote with stale fence %d: refused by the fence check",
				clean(key.String()), p, rep.Fence))
		}
	case device.ReportFrozen:
		r.emit("zombie", fmt.Sprintf("%s  %s was frozen for %s holding fence %d; it acts before checking its lease",
			clean(key.String()), p, rep.Frozen.Round(100*time.Millisecond), rep.Fence))
	case device.ReportLateRenewal:
		verdict := "rejected by the database"
		if rep.Accepted {
			verdict = "accepted: the lease had not expired on the server yet"
		}
		r.emit("late renewal", fmt.Sprintf("%s  %s run %s: %s", clean(key.String()), p, short(rep.Run), verdict))
	case device.ReportEnded:
		delete(r.active, rep.Run)
		r.rec.Ended[rep.Run] = rep.How
		if rep.How == device.EndHandedOver {
			r.emit("handed over", fmt.Sprintf("%s  %s finished its step and handed run %s (fence %d) over to %s",
				clean(key.String()), p, short(rep.Run), rep.Fence, clean(rep.Holder)))
		}
		if rep.How == device.EndLost {
			r.emit("lost", fmt.Sprintf("%s  %s stopped run %s (fence %d): %s",
				clean(key.String()), p, short(rep.Run), rep.Fence, clean(rep.Cause)))
		}
		if rep.Err != "" {
			r.emit("device error", fmt.Sprintf("%s  %s: %s", clean(key.String()), p, clean(rep.Err)))
		}
	case device.ReportError:
		r.emit("device error", fmt.Sprintf("%s  %s: %s", clean(key.String()), p, clean(rep.Err)))
	case device.ReportReady:
		p.failures, p.ready = 0, true
	}
}

// key is the lease key of one of p's conversations.
func (p *proc) key(session string) data.Key { return data.Key{Account: p.account, Session: session} }

// onExit handles a device process's end: its unfinished runs ended with it,
// and unless the demo is stopping, it is restarted.
func (r *runner) onExit(ctx context.Context, p *proc, how string) {
	p.alive, p.frozen = false, false
	end := audit.EndKilled
	if !p.killed {
		end = audit.EndCrashed + ": " + p.label + " exited (" + how + ")"
		if r.stopping {
			end = audit.EndCrashed + ": " + p.label + " did not release before exiting (" + how + ")"
		}
	}
	for run, a := range r.active {
		if a.proc == p {
			r.rec.Ended[run] = end
			delete(r.active, run)
		}
	}
	if r.stopping {
		return
	}
	if !p.killed {
		r.recordSignal(ctx, p, "exited", "exited by itself ("+how+")", "exited by itself ("+how+")")
	}
	delay := restartAfter
	if !p.killed {
		p.failures++
		delay = backoff(p.failures)
		msg := fmt.Sprintf("%s exited by itself (%s)", p, how)
		if p.lastErr != "" {
			msg += ": " + clean(p.lastErr)
		}
		r.emit("device died", msg)
	}
	p.restartAt = time.Now().Add(delay)
}
