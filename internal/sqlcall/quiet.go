package sqlcall

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/leasetop/leasetop/internal/pgerr"
)

// A transaction that sent a NOTIFY holds PostgreSQL's cluster-wide notify
// lock from its pre-commit through its commit record's WAL flush, so every
// notifying transaction commits alone. The Go library therefore sends the
// ownership notification of an acquire or a release itself, right after the
// commit, from a transaction that writes nothing (its commit waits for no
// flush, so it holds the lock for microseconds): one round trip, two
// transactions, in a pgconn pipeline.
//
//	Setup ; Call ; Sync ; Notify ; Sync
//
// Statements before a Sync form one implicit transaction, committed at the
// Sync (pgconn.Pipeline's documentation; the extended query protocol). Setup
// opts the call's transaction out of the trigger's NOTIFY (see
// sql/triggers.sql: only a transaction-local setting whose value is the
// transaction's start time does); Notify reads back the event row the call
// wrote and sends its payload. When the call fails, the server skips the rest
// of its transaction up to the first Sync and rolls it back; Notify still
// runs, finds no event of this run, and sends nothing. pgx's Batch cannot do
// this: it ends with one Sync, so all of its statements are one transaction.

// Statement is a statement with its parameters' type OIDs, so that it can be
// sent in a pipeline without first asking the server to describe it.
type Statement struct {
	SQL    string
	Params []uint32
}

// QuietCall is one of the lease functions' calls as the Go library makes
// it, a quiet call: the call commits in a transaction of its own that opts
// out of the trigger's NOTIFY, and its notification is sent after the
// commit, from a transaction that writes nothing. "Quiet" is the word the
// SQL uses for the same thing (lease.acquire_quiet, release_quiet,
// quiet_event_id: sql/triggers.sql), for SQL callers that notify after
// their own commit.
type QuietCall struct {
	// Setup is the first statement of the call's transaction: the opt-out
	// of the trigger's NOTIFY, and anything else that concerns only this
	// transaction. No parameters. Empty when the call opts out itself
	// (ReleaseQuiet).
	Setup string
	// Call is the lease function's call (Acquire, Release).
	Call Statement
	// Notify sends the notification of the event the call wrote, in a
	// transaction of its own. Parameters: account, session, public run id.
	Notify Statement
	// Plain is the call as Options.Plain makes it, when Call.SQL does more
	// than call (ReleaseQuiet's opts out in its WHERE). Empty: Call.SQL.
	Plain string
}

// OptOut is the opt-out of the trigger's NOTIFY, an expression: the
// transaction's start time, as sql/triggers.sql compares it. (EXTRACT is
// SQL's syntax for pg_catalog.extract.)
const OptOut = `pg_catalog.set_config('lease.caller_notifies', extract(epoch FROM pg_catalog.now())::pg_catalog.text, true)`

// nearNow keeps a read-back of the event a call just committed
// (ForceReleaseQuiet) to the one or two daily partitions of lease.event
// around now: the event was stamped at or after the call's start, and the
// hour both ways is higher_fences' margin for a clock that steps
// (sql/functions.sql). A bound below alone would read every partition made
// ahead too.
const nearNow = `at OPERATOR(pg_catalog.>=) (pg_catalog.now() OPERATOR(pg_catalog.-) interval '1 hour')
           AND at OPERATOR(pg_catalog.<=) (pg_catalog.now() OPERATOR(pg_catalog.+) interval '1 hour')`

var (
	keyRun   = []uint32{pgtype.TextOID, pgtype.TextOID, pgtype.UUIDOID}
	acquireP = []uint32{pgtype.TextOID, pgtype.TextOID, pgtype.UUIDOID, pgtype.IntervalOID, pgtype.TextOID}
)

// NotifyPending is the notification after the commit of an acquire or a
// release: it sends the payload the trigger kept in the session for the
// call's event, if it is for this key and run, and forgets it (see
// lease.pending_key in sql/triggers.sql), without reading lease.event. One
// statement: its WHERE, a one-time filter, runs first. A row when it sent
// the notification, none when there was nothing of the call's to send.
// Parameters: account, session, public run id.
const NotifyPending = `SELECT pg_catalog.pg_notify('lease_events', pg_catalog.current_setting('lease.pending_event')),
       pg_catalog.set_config('lease.pending_for', '', false)
 WHERE pg_catalog.current_setting('lease.pending_for', true) OPERATOR(pg_catalog.=) lease.pending_key($1, $2, $3)`

// The library's acquire and release. AcquireQuiet's call takes Acquire's
// parameters and returns its rows; ReleaseQuiet's takes Release's and
// returns its boolean. Both notify after their commit (NotifyPending). A
// release is one statement: its WHERE, a one-time filter that PostgreSQL
// evaluates before the call, opts out of the trigger's NOTIFY and turns
// synchronous_commit off for its transaction alone, so that it commits
// without waiting for its WAL flush: a release lost in a crash is harmless,
// the lease then expires by itself, and the next acquire of the key, which
// waits for its own flush, makes the release durable first (WAL is flushed
// in order). An acquire's opt-out is a statement of its own: a filter on a
// set-returning call in FROM runs after it.
var (
	AcquireQuiet = QuietCall{
		Setup:  `SELECT ` + OptOut,
		Call:   Statement{Acquire, acquireP},
		Notify: Statement{NotifyPending, keyRun},
	}
	ReleaseQuiet = QuietCall{
		Call: Statement{`SELECT lease.release($1, $2, $3)
 WHERE ` + OptOut + ` IS NOT NULL
   AND pg_catalog.set_config('synchronous_commit', 'off', true) IS NOT NULL`, keyRun},
		Notify: Statement{NotifyPending, keyRun},
		Plain:  Release,
	}
)

// Options are how Run talks to one connection.
type Options struct {
	// Prepared uses named prepared statements, prepared once per
	// connection (pgx's default query mode); otherwise every statement is
	// parsed on each call, as through a transaction pooler.
	Prepared bool
	// Plain makes the call alone, as one statement through pgx's query
	// path (never the simple protocol: see Secret), with the trigger's
	// NOTIFY in its commit: for a role that may not send its own
	// notifications.
	Plain bool
	// Mode is the connection's default query mode (see Secret).
	Mode pgx.QueryExecMode
	// Tracer, when set, is told of the call as pgx tells a QueryTracer of
	// a query (the pipeline does not pass through pgx's query path).
	Tracer pgx.QueryTracer
	// AfterCommit, when set, is called once the call's transaction has
	// committed, before the notification is sent: the two are then sent in
	// two writes instead of one. For tests that stop a process in that
	// window.
	AfterCommit func()
}

// Run makes q on conn with the call's args and the notification's
// notifyArgs (account, session, public run id). scan reads the call's rows;
// it is called only when the call returned a result. Run returns the call's
// error: the server's when it refused the call (nothing committed;
// pgerr.Server finds it), or the connection's when the outcome is unknown.
// The notification's own error is returned apart, in notifyErr, because by
// then the call has committed.
func (q QuietCall) Run(ctx context.Context, conn *pgx.Conn, o Options, args, notifyArgs []any, scan func(pgx.Rows) error) (notifyErr, err error) {
	if o.Plain {
		sql := q.Call.SQL
		if q.Plain != "" {
			sql = q.Plain
		}
		rows, err := conn.Query(ctx, sql, Secret(o.Mode, args...)...)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		if err := scan(rows); err != nil {
			return nil, err
		}
		rows.Close()
		return nil, rows.Err()
	}
	stmts := [3]*pgconn.StatementDescription{}
	if o.Prepared {
		for i, sql := range [3]string{q.Setup, q.Call.SQL, q.Notify.SQL} {
			if sql == "" {
				continue
			}
			if stmts[i], err = conn.Prepare(ctx, sql, sql); err != nil {
				return nil, err
			}
		}
	}
	if o.Tracer != nil {
		ctx = o.Tracer.TraceQueryStart(ctx, conn, pgx.TraceQueryStartData{SQL: q.Call.SQL, Args: args})
	}
	tag, err := q.run(ctx, conn, o, stmts, args, notifyArgs, scan, &notifyErr)
	if o.Tracer != nil {
		o.Tracer.TraceQueryEnd(ctx, conn, pgx.TraceQueryEndData{CommandTag: tag, Err: err})
	}
	return notifyErr, err
}

func (q QuietCall) run(ctx context.Context, conn *pgx.Conn, o Options, stmts [3]*pgconn.StatementDescription,
	args, notifyArgs []any, scan func(pgx.Rows) error, notifyErr *error) (pgconn.CommandTag, error) {
	p := &pipeline{p: conn.PgConn().StartPipeline(ctx), tm: conn.TypeMap()}
	defer p.p.Close()
	if q.Setup != "" {
		if err := p.send(stmts[0], Statement{SQL: q.Setup}, nil); err != nil {
			return pgconn.CommandTag{}, err
		}
	}
	if err := p.send(stmts[1], q.Call, args); err != nil {
		return pgconn.CommandTag{}, err
	}
	p.p.SendPipelineSync()
	sendNotify := func() error {
		if err := p.send(stmts[2], q.Notify, notifyArgs); err != nil {
			return err
		}
		p.p.SendPipelineSync()
		return p.p.Flush()
	}
	if o.AfterCommit == nil {
		if err := sendNotify(); err != nil {
			return pgconn.CommandTag{}, err
		}
	} else if err := p.p.Flush(); err != nil {
		return pgconn.CommandTag{}, err
	}

	// The call's transaction: Setup's result, the call's, its Sync.
	call := 1
	if q.Setup == "" {
		call = 0
	}
	tag, err := p.segment(call, func(i int, rr *pgconn.ResultReader) (pgconn.CommandTag, error) {
		if i != call {
			return rr.Close()
		}
		rows := pgx.RowsFromResultReader(p.tm, rr)
		defer rows.Close()
		if err := scan(rows); err != nil {
			return pgconn.CommandTag{}, err
		}
		rows.Close()
		return rows.CommandTag(), rows.Err()
	})
	if err != nil && pgerr.Server(err) == nil {
		return tag, err // the connection failed: the outcome is unknown
	}
	callErr := err
	if o.AfterCommit != nil {
		if callErr != nil {
			return tag, callErr // nothing committed, nothing to notify
		}
		o.AfterCommit()
		if err := sendNotify(); err != nil {
			*notifyErr = err
			return tag, callErr
		}
	}
	// The notification's transaction.
	_, *notifyErr = p.segment(-1, func(_ int, rr *pgconn.ResultReader) (pgconn.CommandTag, error) { return rr.Close() })
	return tag, callErr
}

// pipeline encodes statements onto a pgconn pipeline with pgx's types.
type pipeline struct {
	p   *pgconn.Pipeline
	tm  *pgtype.Map
	eqb pgx.ExtendedQueryBuilder
}

// binary asks for every result column in binary.
var binary = []int16{pgtype.BinaryFormatCode}

// send queues st with args: as the prepared statement sd, or parsed anew
// when sd is nil.
func (p *pipeline) send(sd *pgconn.StatementDescription, st Statement, args []any) error {
	if sd == nil {
		if err := p.eqb.Build(p.tm, &pgconn.StatementDescription{ParamOIDs: st.Params}, args); err != nil {
			return err
		}
		p.p.SendQueryParams(st.SQL, p.eqb.ParamValues, st.Params, p.eqb.ParamFormats, binary)
		return nil
	}
	if err := p.eqb.Build(p.tm, sd, args); err != nil {
		return err
	}
	// SendQueryStatement keeps the result formats until the results come;
	// the builder reuses its slice.
	p.p.SendQueryStatement(sd, p.eqb.ParamValues, p.eqb.ParamFormats, append([]int16(nil), p.eqb.ResultFormats...))
	return nil
}

// segment reads one transaction's results up to its Sync, handing each
// statement's reader to read with its index. After a statement's error the
// server skips the rest of the transaction: segment returns that error, the
// server's, after the Sync; any other error (the connection's) at
// once. The command tag is that of the statement with index call, if any.
func (p *pipeline) segment(call int, read func(i int, rr *pgconn.ResultReader) (pgconn.CommandTag, error)) (pgconn.CommandTag, error) {
	var (
		tag    pgconn.CommandTag
		stmErr error
	)
	for i := 0; ; i++ {
		res, err := p.p.GetResults()
		switch {
		case pgerr.Server(err) != nil:
			stmErr = cmpErr(stmErr, err)
			continue
		case err != nil:
			return tag, err
		}
		switch r := res.(type) {
		case *pgconn.PipelineSync:
			return tag, stmErr
		case *pgconn.ResultReader:
			t, err := read(i, r)
			if i == call {
				tag = t
			}
			if err != nil {
				if pgerr.Server(err) == nil {
					return tag, err
				}
				stmErr = cmpErr(stmErr, err)
			}
		case nil:
			return tag, errors.New("pipeline: results ended before the Sync")
		}
	}
}

// cmpErr keeps the first error.
func cmpErr(first, next error) error {
	if first != nil {
		return first
	}
	return next
}

// OptionsFor returns the options for a connection made with cfg: prepared
// statements in pgx's default query mode, unnamed ones in any other (a
// connection string that asks for the simple protocol gets the extended one
// here all the same: the call carries a run's secret id, see Secret), and
// cfg's query tracer.
func OptionsFor(cfg *pgx.ConnConfig) Options {
	return Options{
		Prepared: cfg.DefaultQueryExecMode == pgx.QueryExecModeCacheStatement,
		Mode:     cfg.DefaultQueryExecMode,
		Tracer:   cfg.Tracer,
	}
}
