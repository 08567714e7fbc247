package data

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Through a transaction pooler (PgBouncer in pool_mode = transaction, RDS
// Proxy, Supavisor, pgcat) each transaction may run on another server
// connection, so nothing may live in a session. leasetop keeps none: its SQL
// sets settings per function or per transaction, takes only _xact_ advisory
// locks and makes no temporary tables, and the listener's LISTEN has a
// connection of its own (or polls). What remains is the driver's statement
// cache: pgx's default query mode (cache_statement) prepares named
// statements on the server, which a pooler hands to other clients (SQLSTATE
// 42P05 "already exists", 26000 "does not exist").
//
// So when the connection string does not choose a query mode, leasetop asks
// the server for its process id on the first connection: PostgreSQL
// announces its own pid to the client at start-up (BackendKeyData), and a
// pooler announces a key of its own, so the two differ only through one.
// There leasetop uses cache_describe (one round trip, binary results, an
// unnamed statement per call), elsewhere pgx's default. Measured on a direct
// connection (BenchmarkQueryExecMode), cache_describe costs a re-parse per
// call: a one-row read 1.5x, an acquire+release cycle about 1.1x, a snapshot
// of 2000 leases 1.0x; exec and simple_protocol decode text and read a
// snapshot 1.4x slower, and describe_exec needs two round trips that a
// pooler may run on two server connections.

// pooledMode is the query mode used through a pooler.
const pooledMode = pgx.QueryExecModeCacheDescribe

// modeChosen reports whether cfg's query mode was chosen by its connection
// string or by code, so detection must leave it alone.
func modeChosen(cfg *pgx.ConnConfig) bool {
	if cfg.DefaultQueryExecMode != pgx.QueryExecModeCacheStatement {
		return true
	}
	pc, err := pgconn.ParseConfig(cfg.ConnString())
	if err != nil {
		return true // not a string pgx parsed: a config built in code
	}
	_, set := pc.RuntimeParams["default_query_exec_mode"]
	return set
}

// pooled reports whether conn reaches PostgreSQL through a pooler: the
// process id the server reports differs from the one announced at start-up.
func pooled(ctx context.Context, conn *pgx.Conn) (bool, error) {
	var pid uint32
	err := conn.QueryRow(ctx, `SELECT pg_catalog.pg_backend_pid()`, pgx.QueryExecModeSimpleProtocol).Scan(&pid)
	if err != nil {
		return false, err
	}
	return pid != conn.PgConn().PID(), nil
}

// Connect opens a single connection (not a pool's) with cfg, from
// ParseConnConfig; its error is translated like every other of this package.
// Through a pooler, unless cfg chose a query mode, it reconnects in one that
// works there (see pooledMode).
func Connect(ctx context.Context, cfg *pgx.ConnConfig) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil || modeChosen(cfg) {
		return conn, translate(err)
	}
	behind, err := pooled(ctx, conn)
	if err != nil || !behind {
		if err != nil {
			conn.Close(ctx)
			return nil, translate(err)
		}
		return conn, nil
	}
	conn.Close(ctx)
	cfg = cfg.Copy()
	cfg.DefaultQueryExecMode = pooledMode
	conn, err = pgx.ConnectConfig(ctx, cfg)
	return conn, translate(err)
}
