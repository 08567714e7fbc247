package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/leasetop/leasetop/internal/data"
)

// run is one bench run's shared state: where to connect, and the names that
// keep everything bench creates apart from the database's own leases.
type run struct {
	cfg     Config
	connCfg *pgx.ConnConfig
	admin   *pgx.Conn // setup, cleanup and checkpoints; never measured

	id      string // random hex, unique to this run
	prefix  string // every account id bench writes starts with this
	schema  string // the scratch schema
	channel string // the scratch renewal-notification channel

	calls sync.Map // *pgx.Conn -> sqlcall.Options: see callsOf

	// parent and dropName: a run on a database otherDatabase created on
	// parent's server, dropped at the end (monitor-contexts).
	parent   *run
	dropName string
}

// newRun connects the admin connection and creates the scratch schema.
func newRun(ctx context.Context, cfg Config) (*run, error) {
	connCfg, err := data.ParseConnConfig(cfg.DSN)
	if err != nil {
		return nil, err
	}
	connCfg.RuntimeParams["application_name"] = "leasetop bench"
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	id := hex.EncodeToString(b)
	r := &run{
		cfg: cfg, connCfg: connCfg, id: id,
		prefix:  "leasetop-bench-" + id,
		schema:  "lease_bench_" + id,
		channel: "lease_bench_" + id,
	}
	if r.admin, err = r.connect(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

// connect opens one independent connection, its search_path pinned at
// start-up: the baselines' statements are sent as they are written (they
// are what the library's calls are measured against), and the scratch
// schema's and the workloads' own too, so none may resolve a name outside
// pg_catalog whatever the database's search_path (see data.Pinned).
func (r *run) connect(ctx context.Context) (*pgx.Conn, error) {
	conn, err := data.ConnectPinned(ctx, r.connCfg)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	return conn, nil
}

// openConns opens n independent connections: a workload's clients or
// writers, one each. On an error it closes those it opened.
func (r *run) openConns(ctx context.Context, n int) ([]*pgx.Conn, error) {
	conns := make([]*pgx.Conn, 0, n)
	for range n {
		conn, err := r.connect(ctx)
		if err != nil {
			closeConns(conns)
			return nil, err
		}
		conns = append(conns, conn)
	}
	return conns, nil
}

// closeConns closes conns, also after the run's context ended.
func closeConns(conns []*pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, c := range conns {
		_ = c.Close(ctx)
	}
}

// openStore opens a data.Store on a pool of its own, labelled as bench's
// connections are; tracer, when not nil, sees every query on it.
func (r *run) openStore(ctx context.Context, tracer pgx.QueryTracer) (*data.Store, error) {
	cfg, err := data.ParsePoolConfig(r.cfg.DSN)
	if err != nil {
		return nil, err
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = r.connCfg.RuntimeParams["application_name"]
	cfg.ConnConfig.Tracer = tracer
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err == nil {
		err = pool.Ping(ctx)
	}
	if err != nil {
		if pool != nil {
			pool.Close()
		}
		return nil, fmt.Errorf("connect: %w", data.Translate(err))
	}
	return data.New(pool), nil
}

// createScratch creates the scratch schema (see sqlcopy.go).
func (r *run) createScratch(ctx context.Context) error {
	stmts, err := scratchDDL(r.schema, r.channel)
	if err != nil {
		return err
	}
	for _, s := range stmts {
		if _, err := r.admin.Exec(ctx, s); err != nil {
			return fmt.Errorf("create scratch schema %s: %w", r.schema, data.Translate(err))
		}
	}
	return nil
}

// cleanup removes everything this run created: its leases and their events
// (all under its own account id prefix) and the scratch schema. It runs even
// after ctx is cancelled, bounded to 30 s.
func (r *run) cleanup(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	conn := r.admin
	if conn == nil || conn.IsClosed() {
		var err error
		if conn, err = r.connect(ctx); err != nil {
			return err
		}
	}
	defer conn.Close(ctx)
	var errs []error
	quietDelete(ctx, conn, r.prefix)
	for _, stmt := range []string{
		`DELETE FROM lease.session_lease WHERE starts_with(account_id, $1)`,
		`DELETE FROM lease.event WHERE starts_with(account_id, $1)`,
		`DELETE FROM lease.handover_ask WHERE starts_with(account_id, $1)`,
		`DELETE FROM lease.queue_ticket WHERE starts_with(account_id, $1)`,
		`DELETE FROM lease.limit_slot WHERE starts_with(account_id, $1)`,
		`DELETE FROM lease.account_limit WHERE starts_with(account_id, $1)`,
		`DELETE FROM lease.message WHERE starts_with(account_id, $1)`,
		`DELETE FROM lease.inbox WHERE starts_with(account_id, $1)`,
	} {
		if _, err := conn.Exec(ctx, stmt, r.prefix); err != nil {
			errs = append(errs, fmt.Errorf("remove bench rows (account ids %s-*): %w", r.prefix, data.Translate(err)))
		}
	}
	if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{r.schema}.Sanitize()+" CASCADE"); err != nil {
		errs = append(errs, fmt.Errorf("drop scratch schema %s: %w", r.schema, data.Translate(err)))
	}
	return errors.Join(errs...)
}

// checkpoint flushes dirty pages so a checkpoint does not land in the middle
// of the next measurement (and each workload starts from the same state). A
// role without the right to checkpoint just skips it.
func (r *run) checkpoint(ctx context.Context) {
	_, _ = r.admin.Exec(ctx, "CHECKPOINT")
}

// meter is the run's Meter, or one that shows nothing.
func (r *run) meter() Meter {
	if r.cfg.Meter == nil {
		return noMeter{}
	}
	return r.cfg.Meter
}

// account returns the account id of a workload's keys.
func (r *run) account(tag string) string { return r.prefix + "-" + tag }

// keys returns n keys for a workload.
func (r *run) keys(tag string, n int) []data.Key {
	out := make([]data.Key, n)
	for i := range out {
		out[i] = data.Key{Account: r.account(tag), Session: fmt.Sprintf("s%07d", i)}
	}
	return out
}

// table returns the scratch schema's qualified name for obj.
func (r *run) table(obj string) string { return pgx.Identifier{r.schema, obj}.Sanitize() }
