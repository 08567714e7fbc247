package data

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	impl "github.com/leasetop/leasetop/internal/data"
)

// Store is the lease protocol over a connection pool. It is safe for
// concurrent use. A program opens one (Open, OpenWith, New), hands it to
// lease.New, and calls on it only its promised methods: Pool (the pool, for
// the program's own SQL), Close, CheckSchema and Pinned. The others serve
// leasetop's own packages and may change in any release.
type Store = impl.Store

// Options are a Store's settings besides its connection string.
type Options = impl.Options

// Open connects to the database named by dsn (a URL or libpq keyword/value
// string; empty means the libpq PG* environment variables) and checks that its
// lease schema is at this leasetop's version.
func Open(ctx context.Context, dsn string) (*Store, error) {
	return impl.Open(ctx, dsn)
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
	return impl.OpenWith(ctx, dsn, opt)
}

// New wraps an existing pool. It does not check the schema, and leaves the
// pool's query mode as it is: through a transaction pooler it must not be
// pgx's default, cache_statement (use cache_describe or exec).
func New(pool *pgxpool.Pool) *Store {
	return impl.New(pool)
}

// ParsePoolConfig parses dsn and applies leasetop's connection defaults: a
// 5 s connect timeout, TCP keepalive that notices a dead peer in about 25 s,
// and application_name "leasetop". Its error is a *DSNError, which never
// contains the password.
func ParsePoolConfig(dsn string) (*pgxpool.Config, error) {
	return impl.ParsePoolConfig(dsn)
}

// ParseConnConfig is ParsePoolConfig for a single connection.
func ParseConnConfig(dsn string) (*pgx.ConnConfig, error) {
	return impl.ParseConnConfig(dsn)
}

// Connect opens a single connection (not a pool's) with cfg, from
// ParseConnConfig; its error is translated like every other of this package.
// Through a pooler, unless cfg chose a query mode, it reconnects in one that
// works there (see pooledMode).
func Connect(ctx context.Context, cfg *pgx.ConnConfig) (*pgx.Conn, error) {
	return impl.Connect(ctx, cfg)
}

// Querier is what the read helpers need: a pool, a connection or a
// transaction.
type Querier = impl.Querier

// Pinned runs statements on a store's pool with every name they resolve
// through the search_path resolved in pg_catalog (relations then in
// pg_temp), whatever the session's search_path: each runs in a transaction
// of its own whose search_path is pinned (three round trips where the pool
// would take one), or, where the store's sessions were pinned at start-up
// (Options.PinSearchPath on a direct connection), on the pool as it is.
// Its methods are the pool's; Begin and BeginTx start a pinned transaction
// that the caller ends. A Pinned is safe for concurrent use.
type Pinned = impl.Pinned
