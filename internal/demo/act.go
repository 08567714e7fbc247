package demo

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/leasetop/leasetop/internal/data"
)

// targets returns the runs a chaos action may hit, in a stable order: held
// by a live, unfrozen device, for the conversation key when one is given,
// and still holding an unexpired lease in the database. A device reports a
// run's end only after it happened, so a run it has just released, or a
// zombie's run that was taken over while it was frozen and that it is about
// to report lost, still looks active here: killing its process would lose
// nothing, and the kill would show no takeover after process loss.
func (r *runner) targets(ctx context.Context, key *data.Key) []*activeRun {
	var out []*activeRun
	for _, a := range r.active {
		if a.proc.alive && !a.proc.frozen && (key == nil || a.key == *key) && r.holds(ctx, a) {
			out = append(out, a)
		}
	}
	sortRuns(out)
	return out
}

// holds reports whether a's run holds an unexpired lease in the database,
// on the server clock.
func (r *runner) holds(ctx context.Context, a *activeRun) bool {
	l, clock, ok, err := r.store.Lease(ctx, a.key)
	return err == nil && ok && l.RunID == a.run && l.ExpiresAt.After(clock.At(time.Now()))
}

// act performs one chaos action on the pick-th target.
func (r *runner) act(ctx context.Context, kind ActionKind, pick uint64, key *data.Key, reason string) (Line, error) {
	ts := r.targets(ctx, key)
	if len(ts) == 0 {
		return Line{}, errNoTarget
	}
	a := ts[pick%uint64(len(ts))]
	switch kind {
	case ActKill:
		return r.kill(ctx, a), nil
	case ActFreeze:
		return r.freeze(ctx, a), nil
	default:
		return r.forceRelease(ctx, a, reason)
	}
}

func (r *runner) kill(ctx context.Context, a *activeRun) Line {
	p := a.proc
	if err := p.signal(syscall.SIGKILL); err != nil {
		return r.chaos("CHAOS", fmt.Sprintf("kill -9 %s failed: %s", p, clean(err.Error())), "kill -9 failed")
	}
	r.recordSignal(ctx, p, "killed", "kill -9", "kill -9 by the demo")
	p.killed = true
	r.rec.Killed[p.label] = true
	r.rec.Kills++
	return r.chaos("CHAOS kill -9", fmt.Sprintf("%s, which holds %s with fence %d: its lease must expire before anyone else gets in",
		p, clean(a.key.String()), a.fence), "kill -9 "+p.String())
}

func (r *runner) freeze(ctx context.Context, a *activeRun) Line {
	p := a.proc
	if err := p.signal(syscall.SIGSTOP); err != nil {
		return r.chaos("CHAOS", fmt.Sprintf("SIGSTOP %s failed: %s", p, clean(err.Error())), "SIGSTOP failed")
	}
	d := FreezeFor(r.cfg.TTL)
	r.recordSignal(ctx, p, "frozen", "SIGSTOP", fmt.Sprintf("SIGSTOP by the demo for %s", d))
	p.frozen, p.resumeAt = true, time.Now().Add(d)
	r.rec.Frozen[p.label] = true
	r.rec.Freezes++
	return r.chaos("CHAOS SIGSTOP", fmt.Sprintf("%s for %s, longer than the %s TTL, while it holds %s with fence %d",
		p, d, r.cfg.TTL, clean(a.key.String()), a.fence), "SIGSTOP "+p.String())
}

func (r *runner) resume(ctx context.Context, p *proc) {
	p.frozen = false
	if err := p.signal(syscall.SIGCONT); err != nil {
		return
	}
	r.recordSignal(ctx, p, "resumed", "", "SIGCONT by the demo: resumed")
	r.chaos("CHAOS SIGCONT", fmt.Sprintf("%s resumes, still believing it owns what it held", p), "SIGCONT "+p.String()+": zombie")
}

func (r *runner) forceRelease(ctx context.Context, a *activeRun, reason string) (Line, error) {
	ok, err := r.store.ForceRelease(ctx, a.key, a.run, reason)
	switch {
	case err != nil:
		return r.chaos("CHAOS", fmt.Sprintf("force-release %s failed: %s", clean(a.key.String()), clean(err.Error())), "force-release failed"), nil
	case !ok:
		return r.chaos("CHAOS", fmt.Sprintf("force-release %s run %s: nothing released, the lease changed hands", clean(a.key.String()), short(a.run)), "force-release: nothing to release"), nil
	}
	r.rec.ForcedReleases++
	return r.chaos("CHAOS force", fmt.Sprintf("released %s from run %s (%s, fence %d): compare-and-release on the run id",
		clean(a.key.String()), short(a.run), a.proc, a.fence), "force-released "+clean(a.key.String())), nil
}

func sortRuns(runs []*activeRun) {
	slices.SortFunc(runs, func(a, b *activeRun) int {
		return cmp.Or(strings.Compare(a.key.String(), b.key.String()), strings.Compare(a.run.String(), b.run.String()))
	})
}
