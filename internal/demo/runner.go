package demo

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/audit"
	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

const (
	tickEvery     = 100 * time.Millisecond
	restartAfter  = time.Second      // a killed device comes back this soon
	maxBackoff    = 15 * time.Second // a crashing device comes back at most this late
	stopGrace     = 10 * time.Second // devices get this long to release and exit
	forceReason   = "leasetop demo: chaos schedule"
	keyReason     = "leasetop demo: force-released from the monitor"
	giveUpTargets = 3 // TTLs an action waits for a target before it is skipped
)

// activeRun is a run a device reported it started and has not ended.
type activeRun struct {
	run   uuid.UUID
	key   data.Key
	fence int64
	proc  *proc
}

// runner is one Run: the state owned by its loop goroutine.
type runner struct {
	d     *Demo
	cfg   Config
	store *data.Store
	feed  *monitor.Feed // the event stream, read as the monitor reads it
	spawn *spawner
	msgs  chan procMsg
	wg    sync.WaitGroup // the process readers

	procs  []*proc
	active map[uuid.UUID]*activeRun
	rec    *audit.Record
	seen   map[int64]bool // event ids already shown
	scope  map[string]bool

	start       time.Time
	sched       *Schedule
	next        Action
	stopping    bool
	interrupted bool
}

func (d *Demo) newRunner(startID int64) *runner {
	r := &runner{
		d:      d,
		cfg:    d.cfg,
		store:  d.store,
		feed:   newStreamFeed(d.store, startID),
		msgs:   make(chan procMsg, 256),
		active: make(map[uuid.UUID]*activeRun),
		rec:    audit.NewRecord(d.cfg.AccountIDs(), startID),
		seen:   make(map[int64]bool),
		scope:  make(map[string]bool),
		start:  time.Now(),
		sched:  NewSchedule(d.cfg.Seed, d.cfg.TTL),
	}
	r.spawn = &spawner{exe: d.cfg.Exe, dsn: d.cfg.DSN, ttl: d.cfg.TTL, seed: d.cfg.Seed, mix: d.cfg.Mix, msgs: r.msgs, wg: &r.wg}
	r.next = r.sched.Next()
	for a := range d.cfg.Accounts {
		r.scope[d.cfg.Account(a)] = true
		for _, name := range d.cfg.Devices {
			r.procs = append(r.procs, &proc{idx: len(r.procs), name: name, account: d.cfg.Account(a), sessions: d.cfg.SessionIDsOf(a)})
		}
	}
	return r
}

// newStreamFeed is the demo's event stream: a monitor.Feed from the
// events after startID on. The stream needs no renewals, so its periodic
// read is rare.
func newStreamFeed(store *data.Store, startID int64) *monitor.Feed {
	return monitor.NewFeed(store, monitor.FeedConfig{Since: true, After: startID, DeltaInterval: time.Hour, NotifiedInterval: time.Hour})
}

func (r *runner) elapsed() time.Duration { return time.Since(r.start) }

// emit sends a line to the observer.
func (r *runner) emit(tag, text string) Line {
	l := Line{At: r.elapsed(), Time: time.Now(), Tag: tag, Text: text}
	r.d.obs(l)
	return l
}

// chaos sends a line about a chaos action to the observer and keeps it as
// the status; short says it in a few words.
func (r *runner) chaos(tag, text, short string) Line {
	l := Line{At: r.elapsed(), Time: time.Now(), Tag: tag, Text: text, Chaos: true, Short: short}
	r.d.mu.Lock()
	r.d.status = l
	r.d.mu.Unlock()
	r.d.obs(l)
	return l
}

// loop runs the demo until its duration passes or ctx ends.
func (r *runner) loop(ctx context.Context) {
	var until <-chan time.Time
	if r.cfg.Duration > 0 {
		t := time.NewTimer(r.cfg.Duration)
		defer t.Stop()
		until = t.C
	}
	tick := time.NewTicker(tickEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			r.interrupted = true
			return
		case <-until:
			return
		case m := <-r.msgs:
			r.onProc(ctx, m)
		case <-r.feed.Ready():
			if b, ok := r.feed.Take(); ok {
				r.onBatch(b, true)
			}
		case c := <-r.d.cmds:
			c.reply <- r.onCommand(ctx, c)
		case <-tick.C:
			r.onTick(ctx)
		}
	}
}

// shutdown stops every device: SIGCONT for the frozen, SIGTERM for all (each
// releases what it holds and exits), SIGKILL for any still running after
// stopGrace. It returns when every process has exited and its output has
// been read. ctx bounds what it records.
func (r *runner) shutdown(ctx context.Context) {
	r.stopping = true
	_ = r.store.Pinned().QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&r.rec.StoppedAt) // asks pending from now are withdrawn
	for _, p := range r.procs {
		if p.frozen {
			if p.signal(syscall.SIGCONT) == nil {
				r.recordSignal(ctx, p, "resumed", "", "SIGCONT by the demo: resumed to stop")
			}
			p.frozen = false
		}
		_ = p.signal(syscall.SIGTERM)
	}
	deadline := time.Now().Add(stopGrace)
	tick := time.NewTicker(tickEvery)
	defer tick.Stop()
	for r.alive() > 0 {
		select {
		case m := <-r.msgs:
			r.onProc(ctx, m)
		case <-r.feed.Ready():
			if b, ok := r.feed.Take(); ok {
				r.onBatch(b, false) // stopping: a resync would only repeat what catchUp shows
			}
		case <-tick.C:
			if time.Now().After(deadline) {
				for _, p := range r.procs {
					if p.alive && p.signal(syscall.SIGKILL) == nil {
						r.emit("stuck", fmt.Sprintf("%s did not stop within %s of SIGTERM: killed", p, stopGrace))
					}
				}
				deadline = time.Now().Add(time.Hour)
			}
		}
	}
}

func (r *runner) alive() int {
	n := 0
	for _, p := range r.procs {
		if p.alive {
			n++
		}
	}
	return n
}

// onTick runs what is due: resuming frozen devices, restarting dead ones,
// and the chaos schedule.
func (r *runner) onTick(ctx context.Context) {
	now := time.Now()
	for _, p := range r.procs {
		switch {
		case p.alive && p.frozen && now.After(p.resumeAt):
			r.resume(ctx, p)
		case !p.alive && !p.restartAt.IsZero() && now.After(p.restartAt):
			r.restart(ctx, p)
		}
	}
	if r.cfg.NoChaos || r.elapsed() < r.next.At {
		return
	}
	_, err := r.act(ctx, r.next.Kind, r.next.Pick, nil, forceReason)
	if err == nil || r.elapsed()-r.next.At > giveUpTargets*r.cfg.TTL {
		r.next = r.sched.Next()
	}
}

// onCommand runs a demo key from the monitor.
func (r *runner) onCommand(ctx context.Context, c command) Line {
	if r.stopping {
		return Line{At: r.elapsed(), Tag: "demo", Text: "the demo is stopping"}
	}
	if c.kind == actNextMix {
		return r.nextMix()
	}
	l, err := r.act(ctx, c.kind, 0, &c.key, keyReason)
	if err != nil {
		return Line{At: r.elapsed(), Tag: "demo", Text: fmt.Sprintf("no device holds %s right now", clean(c.key.String()))}
	}
	return l
}

// restart starts a dead device again.
func (r *runner) restart(ctx context.Context, p *proc) {
	old := p.String()
	if err := r.spawn.start(p); err != nil {
		p.failures++
		p.restartAt = time.Now().Add(backoff(p.failures))
		r.emit("restart failed", clean(err.Error()))
		return
	}
	r.recordStart(ctx, p)
	r.emit("restarted", fmt.Sprintf("%s is back as pid %d", old, p.pid))
}

// backoff is the delay before restarting a device that died n times in a
// row by itself.
func backoff(n int) time.Duration {
	return min(restartAfter<<min(n, 5), maxBackoff)
}
