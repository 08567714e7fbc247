package data

import (
	"context"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Every name in a statement of leasetop's must mean PostgreSQL's own or
// lease's object, whatever the session's search_path: a database's owner
// (or a role's) can set it, and can create in public and in a schema named
// like a login. PostgreSQL looks for an exact match of an operator's or a
// function's argument types before anything else, whatever the order of the
// path, so an object planted over one of lease's domains (public.=(lease.id_text,
// text)) beats pg_catalog.=(text, text) even with pg_catalog first; with a
// schema before pg_catalog, a mere twin wins, and a domain named like a type
// (public.text) turns a cast into a call of its CHECK.
//
// So a statement either resolves nothing through the path (every function,
// operator and type named with its schema: the hot path's few statements,
// internal/sqlcall), or runs through Pinned: in a transaction whose first
// statement sets the search_path to pg_catalog, pg_temp for that
// transaction alone. The pin must come before the statement is parsed, not
// only before it runs: PostgreSQL plans a prepared statement again when the
// path changed, but keeps the parameter types it inferred when it was
// parsed, and a parameter typed as a planted domain runs the domain's CHECK
// as it is bound. pgx prepares (or describes) a statement in a round trip of
// its own, before a batch runs, so the pin cannot share a batch with it: it
// opens an explicit transaction (BEGIN and the pin in one message), and
// everything the statement needs is parsed inside it. The session's own
// search_path, which a program's SQL on Store.Pool relies on, is untouched.

// pinSQL pins the search_path for the transaction it runs in.
const pinSQL = `SELECT pg_catalog.set_config('search_path', '` + pinnedSearchPath + `', true)`

// Pinned runs statements on a store's pool with every name they resolve
// through the search_path resolved in pg_catalog (relations then in
// pg_temp), whatever the session's search_path: each runs in a transaction
// of its own whose search_path is pinned (three round trips where the pool
// would take one), or, where the store's sessions were pinned at start-up
// (Options.PinSearchPath on a direct connection), on the pool as it is.
// Its methods are the pool's; Begin and BeginTx start a pinned transaction
// that the caller ends. A Pinned is safe for concurrent use.
type Pinned struct {
	pool    pinnable // the store's pool, or one of its connections (On)
	startup bool     // the pool's sessions were given the pinned search_path at start-up
}

// pinnable is what Pinned runs statements on: a *pgxpool.Pool or one of its
// *pgxpool.Conn.
type pinnable interface {
	BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error)
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// Pinned returns the store's pool as Pinned: what leasetop's own reads and
// writes run through, and what a program can run statements of its own
// through that must not resolve names outside pg_catalog.
func (s *Store) Pinned() Pinned { return Pinned{pool: s.pool, startup: s.pinned} }

// On is p on c, one connection of the store's pool: its statements run
// there, pinned alike (for a caller that must know the backend, as
// MaintainEvents' progress watches it).
func (p Pinned) On(c *pgxpool.Conn) Pinned { return Pinned{pool: c, startup: p.startup} }

// beginSQL is BEGIN with opts (pgx's own spelling: pgx.TxOptions has no
// exported one).
func beginSQL(opts pgx.TxOptions) string {
	if opts.BeginQuery != "" {
		return opts.BeginQuery
	}
	var b strings.Builder
	b.WriteString("BEGIN")
	if opts.IsoLevel != "" {
		b.WriteString(" ISOLATION LEVEL " + string(opts.IsoLevel))
	}
	if opts.AccessMode != "" {
		b.WriteString(" " + string(opts.AccessMode))
	}
	if opts.DeferrableMode != "" {
		b.WriteString(" " + string(opts.DeferrableMode))
	}
	return b.String()
}

// BeginTx starts a transaction with opts whose search_path is pinned: BEGIN
// and the pin go in one message.
func (p Pinned) BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error) {
	if !p.startup {
		opts.BeginQuery = beginSQL(opts) + "; " + pinSQL
	}
	return p.pool.BeginTx(ctx, opts)
}

// Begin is BeginTx with the default options.
func (p Pinned) Begin(ctx context.Context) (pgx.Tx, error) { return p.BeginTx(ctx, pgx.TxOptions{}) }

// Exec runs sql in a pinned transaction of its own.
func (p Pinned) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if p.startup {
		return p.pool.Exec(ctx, sql, args...)
	}
	tx, err := p.Begin(ctx)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	tag, err := tx.Exec(ctx, sql, args...)
	if err != nil {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		return tag, err
	}
	return tag, tx.Commit(ctx)
}

// Query runs sql in a pinned transaction of its own, which the rows end
// when they are read to the end or closed: committed unless the statement
// failed (then rolled back), as the implicit transaction of a statement on
// the pool is. Err then includes the commit's error.
func (p Pinned) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if p.startup {
		return p.pool.Query(ctx, sql, args...)
	}
	tx, err := p.Begin(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := tx.Query(ctx, sql, args...)
	if err != nil {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		return nil, err
	}
	return &pinnedRows{Rows: rows, ctx: ctx, tx: tx}, nil
}

// QueryRow is Query for at most one row, as pgx's.
func (p Pinned) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	rows, err := p.Query(ctx, sql, args...)
	return pinnedRow{rows: rows, err: err}
}

// SendBatch runs b in a pinned transaction of its own, committed when the
// results are closed without an error.
func (p Pinned) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if p.startup {
		return p.pool.SendBatch(ctx, b)
	}
	tx, err := p.Begin(ctx)
	if err != nil {
		return failedBatch{err}
	}
	return &pinnedBatch{BatchResults: tx.SendBatch(ctx, b), ctx: ctx, tx: tx}
}

// pinnedRows are a pinned Query's rows: they end its transaction.
type pinnedRows struct {
	pgx.Rows
	ctx  context.Context
	tx   pgx.Tx
	once sync.Once
	err  error // the commit's
}

func (r *pinnedRows) Next() bool {
	if r.Rows.Next() {
		return true
	}
	r.end()
	return false
}

func (r *pinnedRows) Close() { r.end() }

func (r *pinnedRows) Err() error {
	if err := r.Rows.Err(); err != nil {
		return err
	}
	return r.err
}

// end closes the rows (pgx reads what is left) and commits, or rolls back
// when the statement failed.
func (r *pinnedRows) end() {
	r.once.Do(func() {
		r.Rows.Close()
		if r.Rows.Err() != nil {
			_ = r.tx.Rollback(context.WithoutCancel(r.ctx))
			return
		}
		r.err = r.tx.Commit(r.ctx)
	})
}

// pinnedRow is a pinned QueryRow's row.
type pinnedRow struct {
	rows pgx.Rows
	err  error
}

func (r pinnedRow) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	defer r.rows.Close()
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	if err := r.rows.Scan(dest...); err != nil {
		return err
	}
	r.rows.Close()
	return r.rows.Err()
}

// pinnedBatch is a pinned batch's results: closing them ends its
// transaction.
type pinnedBatch struct {
	pgx.BatchResults
	ctx  context.Context
	tx   pgx.Tx
	once sync.Once
	err  error
}

func (b *pinnedBatch) Close() error {
	b.once.Do(func() {
		if b.err = b.BatchResults.Close(); b.err != nil {
			_ = b.tx.Rollback(context.WithoutCancel(b.ctx))
			return
		}
		b.err = b.tx.Commit(b.ctx)
	})
	return b.err
}

// failedBatch is the results of a batch whose transaction did not begin.
type failedBatch struct{ err error }

func (f failedBatch) Exec() (pgconn.CommandTag, error) { return pgconn.CommandTag{}, f.err }
func (f failedBatch) Query() (pgx.Rows, error)         { return nil, f.err }
func (f failedBatch) QueryRow() pgx.Row                { return pinnedRow{err: f.err} }
func (f failedBatch) Close() error                     { return f.err }
func (f failedBatch) Tx() pgx.Tx                       { return nil }
