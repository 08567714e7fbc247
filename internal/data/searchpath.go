package data

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// pinnedSearchPath is the search_path of a pinned transaction (Pinned), of
// a store opened with Options.PinSearchPath, and of a migration: names
// resolve in pg_catalog, and relations then in the session's own temporary
// schema, never before.
const pinnedSearchPath = "pg_catalog, pg_temp"

// SearchPathError was a store with Options.PinSearchPath refusing a
// session, reached through a pooler that would not take the pinned
// search_path, whose search_path put schemas before pg_catalog.
//
// Deprecated: no store returns it since schema version 6. Every statement
// of a store resolves names in pg_catalog and lease whatever the session's
// search_path (see Pinned), through a pooler too, so such a session is
// served instead of refused.
type SearchPathError struct {
	Schemas []string // the session's effective search_path, first to last
}

func (e *SearchPathError) Error() string {
	return fmt.Sprintf("the session's search_path (%s) puts %s before pg_catalog, so objects there would run as this role: "+
		"reset it where it is set (ALTER DATABASE … RESET search_path, ALTER ROLE … RESET search_path), or connect without the pooler",
		strings.Join(e.Schemas, ", "), e.Schemas[0])
}

// openPinned is openPool, with the pinned search_path sent at start-up when
// pin is set. It reports whether the pool's sessions have it: a pooler may
// refuse the parameter (the pool is then opened without it) or take it and
// ignore it (ignore_startup_parameters), and through a pooler a session's
// setting says nothing of the next transaction's server connection, so only
// a direct connection that shows the pinned path counts.
func openPinned(ctx context.Context, cfg *pgxpool.Config, pin bool) (*pgxpool.Pool, bool, error) {
	if !pin {
		pool, err := openPool(ctx, cfg)
		return pool, false, err
	}
	_, asked := cfg.ConnConfig.RuntimeParams["search_path"] // a pooler's refusal of the DSN's own is the DSN's error
	cfg.ConnConfig.RuntimeParams["search_path"] = pinnedSearchPath
	pool, err := openPool(ctx, cfg) // connects, unless cfg chose a query mode
	var pinned bool
	if err == nil {
		if pinned, err = startupPinned(ctx, pool); err != nil {
			pool.Close()
		}
	}
	var pe *PoolerError
	if err != nil {
		if asked || !errors.As(err, &pe) || !strings.Contains(pe.Message, "search_path") {
			return nil, false, err
		}
		delete(cfg.ConnConfig.RuntimeParams, "search_path")
		pool, err = openPool(ctx, cfg)
		return pool, false, err
	}
	return pool, pinned, nil
}

// startupPinned reports whether pool's sessions have the pinned search_path
// from their start-up: a direct connection whose search_path is it.
func startupPinned(ctx context.Context, pool *pgxpool.Pool) (bool, error) {
	c, err := pool.Acquire(ctx)
	if err != nil {
		return false, fmt.Errorf("connect: %w", translate(err))
	}
	defer c.Release()
	behind, err := pooled(ctx, c.Conn())
	if err != nil {
		return false, fmt.Errorf("connect: %w", translate(err))
	}
	if behind {
		return false, nil
	}
	var path string
	if err := c.QueryRow(ctx, `SELECT pg_catalog.current_setting('search_path')`).Scan(&path); err != nil {
		return false, fmt.Errorf("read the search_path: %w", translate(err))
	}
	return path == pinnedSearchPath, nil
}

// ConnectPinned is Connect with the pinned search_path ("pg_catalog,
// pg_temp") sent at start-up, for statements that must be sent as they are
// written (leasetop bench's baselines, which are measured against the
// library's calls), so that no name in them can resolve outside
// pg_catalog. Through a pooler, which refuses the parameter or cannot keep
// it for the connection, it fails: use Connect and Pinned's way instead.
func ConnectPinned(ctx context.Context, cfg *pgx.ConnConfig) (*pgx.Conn, error) {
	cfg = cfg.Copy()
	cfg.RuntimeParams["search_path"] = pinnedSearchPath
	conn, err := Connect(ctx, cfg)
	if err != nil {
		return nil, err
	}
	behind, err := pooled(ctx, conn)
	if err == nil && behind {
		err = errors.New("a pooler stands between this connection and PostgreSQL, and cannot keep its search_path: connect directly")
	}
	if err != nil {
		conn.Close(ctx)
		return nil, fmt.Errorf("pin the search_path: %w", translate(err))
	}
	return conn, nil
}
