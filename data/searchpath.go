package data

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
)

// pinnedSearchPath is the search_path of a store opened with
// Options.PinSearchPath, and of a migration: names resolve in pg_catalog,
// and relations then in the session's own temporary schema, never before.
const pinnedSearchPath = "pg_catalog, pg_temp"

// SearchPathError is a store with Options.PinSearchPath refusing a session,
// reached through a pooler that would not take the pinned search_path, whose
// search_path puts schemas before pg_catalog: functions and operators there
// would take the place of PostgreSQL's own in the store's queries.
type SearchPathError struct {
	Schemas []string // the session's effective search_path, first to last
}

func (e *SearchPathError) Error() string {
	return fmt.Sprintf("the session's search_path (%s) puts %s before pg_catalog, so objects there would run as this role: "+
		"reset it where it is set (ALTER DATABASE … RESET search_path, ALTER ROLE … RESET search_path), or connect without the pooler",
		strings.Join(e.Schemas, ", "), e.Schemas[0])
}

// openPinned is openPool with the pinned search_path when pin is set: sent
// at start-up, or, where a pooler refuses that parameter, checked instead.
func openPinned(ctx context.Context, cfg *pgxpool.Config, pin bool) (*pgxpool.Pool, error) {
	if !pin {
		return openPool(ctx, cfg)
	}
	_, asked := cfg.ConnConfig.RuntimeParams["search_path"] // a pooler's refusal of the DSN's own is the DSN's error
	cfg.ConnConfig.RuntimeParams["search_path"] = pinnedSearchPath
	pool, err := openChecked(ctx, cfg)
	var pe *PoolerError
	if err == nil || asked || !errors.As(err, &pe) || !strings.Contains(pe.Message, "search_path") {
		return pool, err
	}
	delete(cfg.ConnConfig.RuntimeParams, "search_path")
	return openChecked(ctx, cfg)
}

// openChecked is openPool, then checkSearchPath (which also makes the
// pool's first connection where openPool made none).
func openChecked(ctx context.Context, cfg *pgxpool.Config) (*pgxpool.Pool, error) {
	pool, err := openPool(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := checkSearchPath(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	return pool, nil
}

// checkSearchPath returns a *SearchPathError when the session's effective
// search_path (temporary schemas aside: functions and operators are never
// looked up there) does not begin with pg_catalog.
func checkSearchPath(ctx context.Context, pool *pgxpool.Pool) error {
	var schemas []string
	if err := pool.QueryRow(ctx, `SELECT pg_catalog.current_schemas(true)::pg_catalog.text[]`).Scan(&schemas); err != nil {
		return fmt.Errorf("read the search_path: %w", translate(err))
	}
	var path []string
	for _, s := range schemas {
		if !strings.HasPrefix(s, "pg_temp_") {
			path = append(path, s)
		}
	}
	if len(path) > 0 && path[0] != "pg_catalog" {
		return &SearchPathError{Schemas: path}
	}
	return nil
}
