package bench

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/sqlcall"
)

// The lean floor and the staircase. The floor is the cheapest
// lease that keeps a fence, a durable event and a notification after the
// commit: a SECURITY DEFINER PL/pgSQL function with one SET clause whose
// acquire is the seed's conditional UPSERT returning a fence from a
// sequence, then, if granted, its event row (an identity id and one index
// on account, session and id) in the same function, keeping the event's id
// in a session setting; its release is a DELETE returning the row and its
// event row; the client sends each call, a Sync, the notification of the
// kept id and a Sync as one pipeline (sqlcall.QuietCall), the
// library's shape. It is a floor, not leasetop: a takeover's event names no
// previous run, and nothing is validated.
//
// The staircase adds leasetop's parts to the floor one at a time, in the
// order of stairs, each step a workload of its own (stair-*) on tables,
// functions and a sequence of its own in the scratch schema, so that each
// step's price is its difference from the one before, measured in the
// same interleaved set as the seed's cycle and leasetop's (set "cycle").
// The steps call leasetop's own inlined helpers (lease.grant_ok,
// public_run_id, queue_admits, follow_timeline, pending_key) and the last
// steps' trigger is a copy of lease.on_session_lease_change made from the
// embedded SQL, so what a step adds is what leasetop pays for it.

// stairParts are leasetop's parts a step has; each step has those of the
// steps before it.
type stairParts struct {
	Row      bool // leasetop's row: label, times, options, the texts' domains; one clock_timestamp() per call
	Event    bool // leasetop's event row and payload (row_to_json, kept with its pending key)
	History  bool // the history partitioned as lease.event is, with its indexes
	Validate bool // the input checks (grant_ok, key_ok)
	Public   bool // the public run id
	Read     bool // the refusal read before the write
	Queue    bool // the queue's gate
	Failover bool // the failover floor (follow_timeline)
	Fence    bool // the fence-race check; a takeover's fence drawn under its row lock
	Async    bool // the release commits without waiting for its flush
	OptOut   bool // the opt-out statement; a caller that did not opt out is notified in the commit
	Trigger  bool // the trigger writes the event row
	Settings bool // the SET clauses lock_timeout, enable_seqscan, plan_cache_mode
	SetOf    bool // a set-returning acquire
}

// stair is one step: a workload of set "cycle".
type stair struct {
	name string
	adds string // what the step adds to the one before
	set  func(*stairParts)
}

// stairs are the floor and its steps, in order.
var stairs = []stair{
	{name: "floor-cycle", adds: "the lean floor: the seed's UPSERT with a fence from a sequence and its event row in one SECURITY DEFINER function (SET search_path only), a DELETE and its event row, each call's notification after its commit in the same pipeline",
		set: func(*stairParts) {}},
	{name: "stair-row", adds: "leasetop's row: holder label, acquired and renewed times, preemptible and attachment, the ids' and label's domains; one clock_timestamp() a call",
		set: func(p *stairParts) { p.Row = true }},
	{name: "stair-event", adds: "leasetop's event row (its columns, the kind's domain) and payload (row_to_json of the row kept for the notification with its pending key)",
		set: func(p *stairParts) { p.Event = true }},
	{name: "stair-history", adds: "the history partitioned by day as lease.event is now, with its indexes (id per partition; key, id; at; key, at, id)",
		set: func(p *stairParts) { p.History = true }},
	{name: "stair-validate", adds: "input validation (lease.grant_ok, lease.key_ok: one inlined expression each)",
		set: func(p *stairParts) { p.Validate = true }},
	{name: "stair-public", adds: "the public run id (lease.public_run_id: the table and the events keep a hash of the caller's secret)",
		set: func(p *stairParts) { p.Public = true }},
	{name: "stair-read", adds: "the refusal read: the key's row read before the write, so a held key is refused without a row lock",
		set: func(p *stairParts) { p.Read = true }},
	{name: "stair-queue", adds: "the queue's gate: the key's tickets probed before the write",
		set: func(p *stairParts) { p.Queue = true }},
	{name: "stair-failover", adds: "the failover floor: lease.follow_timeline before the fence and the event",
		set: func(p *stairParts) { p.Failover = true }},
	{name: "stair-fence", adds: "the fence-race check: a fresh INSERT's fence against the key's latest events when the sequence moved; a takeover's fence drawn under its row lock",
		set: func(p *stairParts) { p.Fence = true }},
	{name: "stair-async", adds: "the release's commit does not wait for its flush (synchronous_commit off in its transaction)",
		set: func(p *stairParts) { p.Async = true }},
	{name: "stair-optout", adds: "the opt-out: a statement before the acquire, an expression in the release's WHERE; a caller that does not opt out is notified in the commit",
		set: func(p *stairParts) { p.OptOut = true }},
	{name: "stair-trigger", adds: "the trigger writes the event row (a copy of lease.on_session_lease_change), not the function",
		set: func(p *stairParts) { p.Trigger = true }},
	{name: "stair-settings", adds: "the SET clauses lock_timeout, enable_seqscan, plan_cache_mode",
		set: func(p *stairParts) { p.Settings = true }},
	{name: "stair-setof", adds: "a set-returning acquire (SETOF lease.grant, read with SELECT ... FROM)",
		set: func(p *stairParts) { p.SetOf = true }},
}

// stairWorkloads returns the floor and the steps as workloads of set
// "cycle"; only the floor runs unless the steps are named (group stair).
func stairWorkloads() []workload {
	var out []workload
	for i, st := range stairs {
		out = append(out, workload{name: st.name, set: "cycle", loop: stairCycle(i), optIn: i > 0})
	}
	return out
}

// partsOf returns the parts of step i: its own and every earlier step's.
func partsOf(i int) stairParts {
	var p stairParts
	for _, st := range stairs[:i+1] {
		st.set(&p)
	}
	return p
}

// stairCycle is step i's acquire of a free key and release, each call as
// sqlcall.QuietCall sends it. Client 0 creates the step's objects.
func stairCycle(i int) func(r *run) loop {
	return func(r *run) loop {
		st, p := stairs[i], partsOf(i)
		sq := stairSQL{s: pgx.Identifier{r.schema}.Sanitize(), t: strings.ReplaceAll(st.name, "-", "_"), channel: r.channel, p: p}
		acquire, release := sq.calls()
		return loop{
			setup: func(ctx context.Context, c *client) error {
				if c.id != 0 {
					return nil
				}
				return r.createStair(ctx, sq)
			},
			op: func(ctx context.Context, c *client) error {
				_, key := c.nextKey()
				run := uuid.New()
				notifyArgs := []any(nil)
				if p.Event {
					notifyArgs = []any{key.Account, key.Session, sq.pub(run)}
				}
				granted := false
				if _, err := acquire.Run(ctx, c.conn, r.callsOf(c.conn), []any{key.Account, key.Session, run, holdTTL, "bench"}, notifyArgs,
					func(rows pgx.Rows) error {
						for rows.Next() {
							v, err := rows.Values()
							if err != nil {
								return err
							}
							granted = v[0] != nil // the fence, or the grant's run id
						}
						return rows.Err()
					}); err != nil {
					return fmt.Errorf("%s acquire %s: %w", st.name, key, err)
				}
				if !granted {
					return fmt.Errorf("%s acquire %s: refused, want granted", st.name, key)
				}
				released := false
				if _, err := release.Run(ctx, c.conn, r.callsOf(c.conn), []any{key.Account, key.Session, run}, notifyArgs,
					func(rows pgx.Rows) error {
						for rows.Next() {
							if err := rows.Scan(&released); err != nil {
								return err
							}
						}
						return rows.Err()
					}); err != nil {
					return fmt.Errorf("%s release %s: %w", st.name, key, err)
				}
				if !released {
					return fmt.Errorf("%s release %s: not held, want released", st.name, key)
				}
				return nil
			},
			rows: []row{{name: st.name, desc: st.adds}},
		}
	}
}

// createStair creates a step's sequence, tables, functions and, for the
// steps with the trigger, the trigger: on the admin connection.
func (r *run) createStair(ctx context.Context, sq stairSQL) error {
	stmts, err := sq.ddl()
	if err != nil {
		return err
	}
	if sq.p.History {
		parts, err := eventPartitionBounds(ctx, r.admin)
		if err != nil {
			return err
		}
		stmts = append(stmts, sq.partitions(parts)...)
	}
	for _, s := range stmts {
		if _, err := r.admin.Exec(ctx, s); err != nil {
			return fmt.Errorf("create %s: %w\n%s", sq.t, data.Translate(err), s)
		}
	}
	return nil
}

// eventPartitionBounds returns the bound of each of lease.event's
// partitions, as pg_get_expr writes it ("FOR VALUES FROM (...) TO (...)",
// "DEFAULT").
func eventPartitionBounds(ctx context.Context, conn *pgx.Conn) ([]string, error) {
	rows, err := conn.Query(ctx, `SELECT pg_get_expr(c.relpartbound, c.oid)
		  FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		 WHERE i.inhparent = 'lease.event'::regclass ORDER BY c.oid`)
	if err != nil {
		return nil, fmt.Errorf("read lease.event's partitions: %w", err)
	}
	bounds, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("read lease.event's partitions: %w", err)
	}
	if len(bounds) == 0 {
		return nil, errors.New("lease.event has no partitions")
	}
	return bounds, nil
}

// stairSQL writes one step's SQL: its objects in scratch schema s, named
// <t>_lease, <t>_event, <t>_fence, <t>_acquire, <t>_release.
type stairSQL struct {
	s, t, channel string
	p             stairParts
}

func (q stairSQL) name(obj string) string { return q.s + "." + q.t + "_" + obj }

// pub is the run id the step's rows record for run.
func (q stairSQL) pub(run uuid.UUID) uuid.UUID {
	if q.p.Public {
		return data.PublicRunID(run)
	}
	return run
}

// calls returns the step's acquire and release as the library sends its
// own: each call, a Sync, its notification, a Sync.
func (q stairSQL) calls() (acquire, release sqlcall.QuietCall) {
	acquireP := []uint32{pgtype.TextOID, pgtype.TextOID, pgtype.UUIDOID, pgtype.IntervalOID, pgtype.TextOID}
	releaseP := acquireP[:3]
	notify := sqlcall.Statement{SQL: `SELECT pg_catalog.pg_notify(` + quoteLiteral(q.channel) + `, pg_catalog.current_setting('floor.event'))`}
	if q.p.Event {
		notify = sqlcall.Statement{SQL: strings.Replace(sqlcall.NotifyPending, "'lease_events'", quoteLiteral(q.channel), 1), Params: releaseP}
	}
	acquire.Call = sqlcall.Statement{SQL: `SELECT ` + q.name("acquire") + `($1, $2, $3, $4, $5)`, Params: acquireP}
	if q.p.SetOf {
		acquire.Call.SQL = `SELECT run_id, fence, expires_at FROM ` + q.name("acquire") + `($1, $2, $3, $4, $5)`
	}
	if q.p.OptOut {
		acquire.Setup = `SELECT ` + sqlcall.OptOut
	}
	acquire.Notify = notify
	var where []string
	if q.p.OptOut {
		where = append(where, sqlcall.OptOut+` IS NOT NULL`)
	}
	if q.p.Async {
		where = append(where, `pg_catalog.set_config('synchronous_commit', 'off', true) IS NOT NULL`)
	}
	release.Call = sqlcall.Statement{SQL: `SELECT ` + q.name("release") + `($1, $2, $3)`, Params: releaseP}
	if len(where) > 0 {
		release.Call.SQL += ` WHERE ` + strings.Join(where, ` AND `)
	}
	release.Notify = notify
	return acquire, release
}
