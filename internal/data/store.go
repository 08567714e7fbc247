package data

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/leasetop/leasetop/internal/sqlcall"
)

// Store is the lease protocol over a connection pool. It is safe for
// concurrent use.
type Store struct {
	pool   *pgxpool.Pool
	opt    Options
	pinned bool // the pool's sessions have the pinned search_path from their start-up (Pinned)
	polls  pollMemory

	calls       sqlcall.Options // how acquire and release reach the pool's connections (sqlcall.QuietCall)
	plainCalls  atomic.Bool     // the role may not send its own notifications: the trigger does
	afterCommit func()          // tests only (export_test.go): see sqlcall.Options.AfterCommit
}

// Options are a Store's settings besides its connection string.
type Options struct {
	// ListenDSN is the connection string its listeners LISTEN on, when that
	// must not be the store's own: through a transaction pooler, a direct
	// (or session-mode) connection to the primary. Default: the store's.
	ListenDSN string
	// Poll, when > 0, makes its listeners poll lease.event every Poll
	// instead of listening (see ListenerConfig.Poll).
	Poll time.Duration
	// OnPoll, when set, is called once per listener of the store, on the
	// listener's goroutine, when it enters poll mode, with its state (Poll
	// and Reason say how often and why): a program's one line about it. It
	// must not block.
	OnPoll func(ListenerState)
	// OnNotifyError, when set, is called when an acquire, release, preempt
	// or forced release committed but the notification the store sends
	// right after the commit was not sent (*NotifyError), on the caller's
	// goroutine, before the call returns its result: the call itself
	// succeeded, and listeners find the transition in lease.event when
	// they catch up, so it is reported here rather than returned. Use it to
	// log or count. It must not block. Default: not reported.
	OnNotifyError func(error)
	// PinSearchPath also sends the pinned search_path ("pg_catalog,
	// pg_temp") at start-up, so that the store's statements need not pin it
	// in each transaction (Pinned costs two round trips more), and names in
	// any statement on Pool resolve in pg_catalog only (leasetop's own tools
	// set it). Without it the store's statements resolve names in
	// pg_catalog and lease all the same, whatever the database's or the
	// role's search_path says. Through a pooler, which refuses the parameter
	// or cannot keep it for a session, the store pins each transaction
	// instead. Leave it off if your own SQL on Pool relies on the
	// search_path; with it on, do not change the search_path of Pool's
	// sessions.
	PinSearchPath bool
}

// Open connects to the database named by dsn (a URL or libpq keyword/value
// string; empty means the libpq PG* environment variables) and checks that its
// lease schema is at this leasetop's version.
func Open(ctx context.Context, dsn string) (*Store, error) {
	return OpenWith(ctx, dsn, Options{})
}

// OpenWith is Open with Options. An Options.ListenDSN that does not parse is
// a *DSNError.
//
// Unless dsn chooses a query mode (default_query_exec_mode), OpenWith finds
// out on its first connection whether a pooler stands between it and
// PostgreSQL, and there uses a query mode that needs no prepared statement
// to outlive its transaction (pgx.QueryExecModeCacheDescribe, in
// Pool().Config().ConnConfig.DefaultQueryExecMode).
func OpenWith(ctx context.Context, dsn string, opt Options) (*Store, error) {
	cfg, err := ParsePoolConfig(dsn)
	if err != nil {
		return nil, err
	}
	if opt.ListenDSN != "" {
		if _, err := ParseConnConfig(opt.ListenDSN); err != nil {
			return nil, err
		}
	}
	if opt.Poll < 0 {
		return nil, &InputError{Field: "poll interval", Problem: "must not be negative"}
	}
	s := &Store{opt: opt}
	if s.pool, s.pinned, err = openPinned(ctx, cfg, opt.PinSearchPath); err != nil {
		return nil, err
	}
	s.calls = sqlcall.OptionsFor(s.pool.Config().ConnConfig)
	if err := s.CheckSchema(ctx); err != nil {
		s.pool.Close()
		return nil, err
	}
	return s, nil
}

// openPool opens the pool, in the pooled query mode when its first
// connection reaches PostgreSQL through a pooler and cfg chose no mode.
func openPool(ctx context.Context, cfg *pgxpool.Config) (*pgxpool.Pool, error) {
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", translate(err))
	}
	if modeChosen(cfg.ConnConfig) {
		return pool, nil
	}
	var behind bool
	err = pool.AcquireFunc(ctx, func(c *pgxpool.Conn) error {
		var err error
		behind, err = pooled(ctx, c.Conn())
		return err
	})
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect: %w", translate(err))
	}
	if !behind {
		return pool, nil
	}
	pool.Close()
	cfg.ConnConfig.DefaultQueryExecMode = pooledMode
	if pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		return nil, fmt.Errorf("connect: %w", translate(err))
	}
	return pool, nil
}

// New wraps an existing pool. It does not check the schema, and leaves the
// pool's query mode as it is: through a transaction pooler it must not be
// pgx's default, cache_statement (use cache_describe or exec).
func New(pool *pgxpool.Pool) *Store {
	return &Store{pool: pool, calls: sqlcall.OptionsFor(pool.Config().ConnConfig)}
}

// Pool returns the underlying pool, for callers that run their own
// transactions (for example a fence-checked write).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Close closes the pool.
func (s *Store) Close() { s.pool.Close() }

// ParsePoolConfig parses dsn and applies leasetop's connection defaults: a
// 5 s connect timeout, TCP keepalive that notices a dead peer in about 25 s,
// and application_name "leasetop". Its error is a *DSNError, which never
// contains the password.
func ParsePoolConfig(dsn string) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, parseError(err)
	}
	applyConnDefaults(cfg.ConnConfig)
	return cfg, nil
}

// ParseConnConfig is ParsePoolConfig for a single connection.
func ParseConnConfig(dsn string) (*pgx.ConnConfig, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, parseError(err)
	}
	applyConnDefaults(cfg)
	return cfg, nil
}

func applyConnDefaults(cfg *pgx.ConnConfig) {
	if cfg.ConnectTimeout == 0 || cfg.ConnectTimeout > 5*time.Second {
		cfg.ConnectTimeout = 5 * time.Second
	}
	d := &net.Dialer{KeepAliveConfig: net.KeepAliveConfig{
		Enable: true, Idle: 10 * time.Second, Interval: 5 * time.Second, Count: 3,
	}}
	cfg.DialFunc = d.DialContext
	if _, ok := cfg.RuntimeParams["application_name"]; !ok {
		cfg.RuntimeParams["application_name"] = "leasetop"
	}
}

// CheckSchema returns a *SchemaError unless the database's lease schema is at
// this leasetop's version.
func (s *Store) CheckSchema(ctx context.Context) error {
	have, err := SchemaVersion(ctx, s.pool)
	if err != nil {
		return err
	}
	if want := currentVersion(); have != want {
		return &SchemaError{Have: have, Want: want}
	}
	return nil
}

// Querier is what the read helpers need: a pool, a connection or a
// transaction.
type Querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// SchemaVersion returns the recorded lease schema version, 0 when there is
// no lease schema.
func SchemaVersion(ctx context.Context, q Querier) (int, error) {
	var exists bool
	if err := q.QueryRow(ctx, `SELECT pg_catalog.to_regclass('lease.schema_version') IS NOT NULL`).Scan(&exists); err != nil {
		return 0, fmt.Errorf("read schema version: %w", translate(err))
	}
	if !exists {
		return 0, nil
	}
	var v int
	err := q.QueryRow(ctx, `SELECT version FROM lease.schema_version`).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read schema version: %w", translate(err))
	}
	return v, nil
}
