package data

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Store is the lease protocol over a connection pool. It is safe for
// concurrent use.
type Store struct {
	pool *pgxpool.Pool
}

// Open connects to the database named by dsn (a URL or libpq keyword/value
// string; empty means the libpq PG* environment variables) and checks that its
// lease schema is at this leasetop's version.
func Open(ctx context.Context, dsn string) (*Store, error) {
	cfg, err := ParsePoolConfig(dsn)
	if err != nil {
		return nil, err
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", translate(err))
	}
	s := New(pool)
	if err := s.CheckSchema(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

// New wraps an existing pool. It does not check the schema.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

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
	if err := q.QueryRow(ctx, `SELECT to_regclass('lease.schema_version') IS NOT NULL`).Scan(&exists); err != nil {
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
