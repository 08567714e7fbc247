package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/sqlcall"
	"github.com/leasetop/leasetop/lease"
)

const hammerWaitDesc = "the same contention (%d clients, one account with a limit of %d, each holding its slot %s then releasing it) " +
	"with each client a lease.Client of its own, on its own store and connections, taking its slot with Client.Queue: " +
	"the account's queue, so each freed slot goes to the oldest waiter (fair)"

// runLimitsHammerWait is runLimitsHammer with clients that wait as the
// library's do instead of retrying at once: each of r.cfg.Clients is a
// lease.Client of its own (a process's) on a store of its own, queueing in
// the account for a session of its own with Client.Queue, holding the grant
// hammerHold and releasing it. The attempts per grant are its acquire calls
// (a tracer on its stores), 1 when no acquire was refused.
func (r *run) runLimitsHammerWait(ctx context.Context, w workload) ([]Result, error) {
	account := r.account(w.name)
	if _, err := r.admin.Exec(ctx, `SELECT lease.set_limit($1, '', $2)`, account, hammerSlots); err != nil {
		return nil, fmt.Errorf("set the hammer's limit: %w", err)
	}
	h := &hammer{}
	tr := &attemptTracer{h: h}
	allow := lease.AuthorizerFunc(func(context.Context, lease.Request) error { return nil })
	permits := make([]lease.Permit, r.cfg.Clients)
	clients := make([]*lease.Client, 0, r.cfg.Clients)
	stores := make([]*data.Store, 0, r.cfg.Clients)
	defer func() {
		for _, c := range clients {
			c.Close()
		}
		for _, s := range stores {
			s.Close()
		}
	}()
	for i := range permits {
		store, err := r.openStore(ctx, tr)
		if err != nil {
			return nil, err
		}
		stores = append(stores, store)
		c, err := lease.New(store, lease.Config{TTL: 30 * time.Second})
		if err != nil {
			return nil, err
		}
		clients = append(clients, c)
		key := data.Key{Account: account, Session: fmt.Sprintf("s%03d", i)}
		if permits[i], err = c.Authorize(ctx, allow, key, fmt.Sprintf("hammer-%03d", i)); err != nil {
			return nil, err
		}
	}
	r.checkpoint(ctx)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// The clients' Queue calls end with waiting; a grant taken before it
	// ends is still held hammerHold and released, as in runLimitsHammer.
	waiting, stopWaiting := context.WithCancel(ctx)
	defer stopWaiting()
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Go(func() {
			if err := h.queue(ctx, waiting, c, permits[i]); err != nil && ctx.Err() == nil {
				cancel(err)
			}
		})
	}
	m, err := h.measure(ctx, r, stopWaiting, &wg)
	if err != nil {
		return nil, err
	}
	res := newResult(w.name, fmt.Sprintf(hammerWaitDesc, r.cfg.Clients, hammerSlots, hammerHold), &h.toGrant, m.window)
	res.Note = fmt.Sprintf("slots %.1f%% full; %.1f attempts (acquire calls) per grant", 100*m.util, m.attempts)
	h.cpuPerGrant(&res, m)
	return []Result{res}, nil
}

// queue is one queueing client: Queue until granted, hold, release, until
// waiting ends.
func (h *hammer) queue(ctx, waiting context.Context, c *lease.Client, p lease.Permit) error {
	for waiting.Err() == nil {
		recording := h.recording.Load()
		first := time.Now()
		l, err := c.Queue(waiting, p)
		if err != nil {
			if waiting.Err() != nil {
				return nil
			}
			return err
		}
		got := time.Now()
		if recording {
			h.mu.Lock()
			h.toGrant.Record(got.Sub(first))
			h.mu.Unlock()
		}
		sleepCtx(ctx, hammerHold)
		if err := l.Release(ctx); err != nil {
			return err
		}
		h.held(got)
	}
	return nil
}

// attemptTracer counts the acquire calls of the queueing clients' stores
// while the hammer records.
type attemptTracer struct{ h *hammer }

// TraceQueryStart counts an acquire call.
func (t *attemptTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if (d.SQL == sqlcall.Acquire || d.SQL == sqlcall.AcquireWith) && t.h.recording.Load() {
		t.h.attempts.Add(1)
	}
	return ctx
}

// TraceQueryEnd does nothing: a call counts as it starts.
func (t *attemptTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// serverTime is the CPU time of a server on this machine at one moment:
// each of its processes' (the postmaster and its children: backends,
// listeners, the WAL writer, autovacuum), and the children that ended and
// were reaped (the postmaster's cutime and cstime). A lease.Client starts
// and stops its listener's connection as waiters come and go, so backends
// that live less than a window are part of the cost.
type serverTime struct {
	procs  map[int]time.Duration
	reaped time.Duration
}

// serverCPU reads the CPU time of the server of r's admin connection, found
// as its backend's parent (/proc: the server on this machine).
func (r *run) serverCPU() (serverTime, error) {
	_, postmaster, err := procStat(int(r.admin.PgConn().PID()))
	if err != nil {
		return serverTime{}, err
	}
	fields, _, err := procStat(postmaster)
	if err != nil {
		return serverTime{}, err
	}
	cutime, err1 := strconv.ParseInt(fields[13], 10, 64)
	cstime, err2 := strconv.ParseInt(fields[14], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return serverTime{}, err
	}
	t := serverTime{procs: map[int]time.Duration{}, reaped: time.Duration(cutime+cstime) * 10 * time.Millisecond}
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return serverTime{}, err
	}
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		if pid != postmaster {
			if _, parent, err := procStat(pid); err != nil || parent != postmaster {
				continue // not the server's, or ended meanwhile: reaped counts it
			}
		}
		if c, err := backendCPU(uint32(pid)); err == nil {
			t.procs[pid] = c
		}
	}
	return t, nil
}

// since is the CPU the server spent between before and t: a process that
// started in between counts from 0; one that ended counts in reaped, all
// its life, less what before saw of it.
func (t serverTime) since(before serverTime) time.Duration {
	d := t.reaped - before.reaped
	for pid, c := range t.procs {
		d += c - before.procs[pid]
	}
	for pid, c := range before.procs {
		if _, ok := t.procs[pid]; !ok {
			d -= c
		}
	}
	return d
}

// procStat returns the fields of /proc/pid/stat after the command name
// (state first) and the parent's pid.
func procStat(pid int) ([]string, int, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil, 0, errors.New("no command name")
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 15 {
		return nil, 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	ppid, err := strconv.Atoi(f[1])
	return f, ppid, err
}

// cpuPerGrant puts the server's CPU per grant into res: nothing when either
// read failed (the server is on another machine).
func (h *hammer) cpuPerGrant(res *Result, m hammerWindow) {
	if m.cpuErr != nil || m.grants == 0 {
		return
	}
	res.ServerCPUus = float64(m.cpu.Microseconds()) / float64(m.grants)
	res.Note += fmt.Sprintf("; server CPU %.0f us per grant", res.ServerCPUus)
}
