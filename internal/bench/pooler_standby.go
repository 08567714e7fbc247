package bench

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

// The production workloads: leasetop through a transaction pooler, and the
// monitor's poll mode (docs/production.md, "Production deployment").

// pollEvery is the poll interval the poll-mode workloads use: the one a
// listener falls back to by itself.
const pollEvery = data.DefaultFallbackPoll

// poolerCycles measures acquire+release cycles through the transaction
// pooler at Config.PoolerDSN against the same cycles on direct connections,
// interleaved in the same run (runSet's slices): what going through
// PgBouncer costs the protocol's hottest pair of calls. Each side uses the
// query mode leasetop picks for it: pgx's statement cache directly, and
// cache_describe through the pooler (data.Connect finds it).
func poolerCycles(ctx context.Context, r *run, w workload) ([]Result, error) {
	if r.cfg.PoolerDSN == "" {
		return nil, errors.New("needs a transaction pooler in front of the database: --pooler-dsn " +
			"(without --dsn, bench starts PgBouncer in front of its throwaway server)")
	}
	pcfg, err := data.ParseConnConfig(r.cfg.PoolerDSN)
	if err != nil {
		return nil, err
	}
	pcfg.RuntimeParams["application_name"] = r.connCfg.RuntimeParams["application_name"]
	direct, err := r.openConns(ctx, r.cfg.Clients)
	defer closeConns(direct)
	if err != nil {
		return nil, err
	}
	pooled := make([]*pgx.Conn, 0, r.cfg.Clients)
	defer func() { closeConns(pooled) }()
	for range r.cfg.Clients {
		conn, err := data.Connect(ctx, pcfg)
		if err != nil {
			return nil, fmt.Errorf("connect through the pooler: %w", err)
		}
		pooled = append(pooled, conn)
	}
	members := []*member{
		{w: workload{name: w.name + "-direct"}, l: cycleAs(r, w.name+"-direct", "lease.acquire + lease.release on direct connections, interleaved with "+w.name)},
		{w: workload{name: w.name}, l: cycleAs(r, w.name, "lease.acquire + lease.release through the transaction pooler (cache_describe)")},
	}
	r.prepare(ctx, members[0], direct)
	r.prepare(ctx, members[1], pooled)
	r.interleave(ctx, members)
	return append(members[0].results, members[1].results...), errors.Join(members[0].err, members[1].err)
}

// cycleAs is the cycle workload's op, reported as one row named name.
func cycleAs(r *run, name, desc string) loop {
	l := cycle(r)
	l.tag, l.rows = name, []row{{name: name, desc: desc}}
	return l
}

// pollCost measures what an idle monitor in poll mode costs the database
// at MonitorLeases live leases (and as many events): its queries per second
// by kind and their time, taken by a query tracer on the feed's own pool,
// and the server's time for one idle poll, from EXPLAIN ANALYZE of the poll
// query the tracer saw (plan and execution, no network).
func pollCost(ctx context.Context, r *run, w workload) ([]Result, error) {
	return r.idleFeedCost(ctx, w, data.ListenerConfig{Poll: pollEvery},
		fmt.Sprintf("idle poll of lease.event every %s at %d leases: client-side time per poll", pollEvery, r.cfg.MonitorLeases),
		"server time of one idle poll (EXPLAIN ANALYZE: planning + execution)")
}

// listenCost is pollCost for a monitor that listens: what its catch-up
// costs, the read of lease.event by id every data.DefaultCatchUp that
// delivers transitions whose notification never came.
func listenCost(ctx context.Context, r *run, w workload) ([]Result, error) {
	return r.idleFeedCost(ctx, w, data.ListenerConfig{},
		fmt.Sprintf("idle listening feed at %d leases: its catch-up read of lease.event every %s, client-side time per read", r.cfg.MonitorLeases, data.DefaultCatchUp),
		"server time of one idle catch-up read (EXPLAIN ANALYZE: planning + execution)")
}

// idleFeedCost measures an idle monitor feed with listener configuration
// lc at MonitorLeases leases: its reads of lease.event by id (results
// w.name, described readDesc, and w.name-server, serverDesc) and its reads
// of renewed leases (w.name-renewals).
func (r *run) idleFeedCost(ctx context.Context, w workload, lc data.ListenerConfig, readDesc, serverDesc string) ([]Result, error) {
	if err := r.preloadLeases(ctx, w.name, r.cfg.MonitorLeases); err != nil {
		return nil, err
	}
	tr := &queryLog{}
	store, err := r.openStore(ctx, tr)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	feed := monitor.NewFeed(store, monitor.FeedConfig{Listener: lc})
	stop := feed.Start(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			if _, ok := feed.Next(); !ok {
				return
			}
		}
	})
	defer wg.Wait()
	defer stop()
	r.checkpoint(ctx)
	if !sleepCtx(ctx, max(r.cfg.Warmup, 2*time.Second)) { // the first resync of every lease is not idle
		return nil, ctx.Err()
	}
	tr.reset()
	start := time.Now()
	if !sleepCtx(ctx, r.cfg.Duration) {
		return nil, ctx.Err()
	}
	window := time.Since(start)
	polls, deltas, others, last := tr.take()
	server, err := r.explainTime(ctx, last)
	if err != nil {
		return nil, err
	}
	res := []Result{
		newResult(w.name, readDesc, polls, window),
		newResult(w.name+"-server", serverDesc, server, 0),
		newResult(w.name+"-renewals", "the monitor's read of renewed leases, every DeltaInterval (1 s), at the same time", deltas, window),
	}
	total := float64(polls.Count()+deltas.Count()+others.Count()) / window.Seconds()
	res[0].Note = fmt.Sprintf(", %.1f queries/s in all from the idle monitor", total)
	return res, nil
}

// explainTime runs EXPLAIN ANALYZE of q 100 times and returns the server's
// planning + execution times.
func (r *run) explainTime(ctx context.Context, q tracedQuery) (*Histogram, error) {
	if q.sql == "" {
		return nil, errors.New("the feed made no read of lease.event to explain")
	}
	h := &Histogram{}
	for range 100 {
		var plan []map[string]any
		if err := r.admin.QueryRow(ctx, `EXPLAIN (ANALYZE, FORMAT JSON) `+q.sql, q.args...).Scan(&plan); err != nil {
			return nil, fmt.Errorf("explain the idle poll: %w", data.Translate(err))
		}
		planning, _ := plan[0]["Planning Time"].(float64)
		execution, _ := plan[0]["Execution Time"].(float64)
		h.Record(time.Duration((planning + execution) * float64(time.Millisecond)))
	}
	return h, nil
}

// tracedQuery is a query a tracer saw.
type tracedQuery struct {
	sql  string
	args []any
}

// queryLog is a pgx tracer that times every query of a pool by kind: polls
// of lease.event, reads of renewed leases, and the rest.
type queryLog struct {
	mu                    sync.Mutex
	polls, deltas, others *Histogram
	last                  tracedQuery // the latest poll
}

type queryStart struct{}

// TraceQueryStart notes when a query started.
func (l *queryLog) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	return context.WithValue(ctx, queryStart{}, tracedStart{at: time.Now(), q: tracedQuery{sql: d.SQL, args: d.Args}})
}

type tracedStart struct {
	at time.Time
	q  tracedQuery
}

// TraceQueryEnd records the query's time under its kind.
func (l *queryLog) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryEndData) {
	st, ok := ctx.Value(queryStart{}).(tracedStart)
	if !ok || d.Err != nil {
		return
	}
	took := time.Since(st.at)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.polls == nil {
		l.polls, l.deltas, l.others = &Histogram{}, &Histogram{}, &Histogram{}
	}
	switch {
	case strings.Contains(st.q.sql, "FROM lease.event WHERE id >"):
		l.polls.Record(took)
		l.last = st.q
	case strings.Contains(st.q.sql, "l.renewed_at >"):
		l.deltas.Record(took)
	default:
		l.others.Record(took)
	}
}

// reset forgets what was recorded (the warm-up).
func (l *queryLog) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.polls, l.deltas, l.others = &Histogram{}, &Histogram{}, &Histogram{}
}

// take returns what was recorded since reset, and the latest poll.
func (l *queryLog) take() (polls, deltas, others *Histogram, last tracedQuery) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.polls, l.deltas, l.others, l.last
}
