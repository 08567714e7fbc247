package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/sqlcall"
)

// keepAlive measures what keeping many leases alive costs one process: one
// client on one connection holding its leases and renewing them as fast as
// it can, five ways, interleaved in slices of a second (as runSet does) so
// that their ratios see the same machine:
//
//   - keepalive-seed: the seed's per-key UPDATE on seed_lease (no
//     function; see seedRenewSQL), one key per statement, round robin
//     over 1000 held keys;
//   - keepalive-renew: lease.renew one key at a time as data.Store.Renew
//     sends it, over 1000 held keys;
//   - keepalive-1, -100, -1000: lease.renew_many of all N held keys in one
//     call, as data.Store.RenewMany sends it (what a lease.Client sends for
//     the leases that fall due together).
//
// Every row's ops are renewals of one lease (a renew_many call counts N),
// and its latencies are the calls'. The server's CPU per renewal is the
// client's backend's CPU time from /proc (when the server runs on this
// machine) over the renewals it made; the WAL per renewal is the server's
// WAL written during the row's slices over them.
func keepAlive(ctx context.Context, r *run, w workload) ([]Result, error) {
	return runKeepAlive(ctx, r, []*kaMember{
		{name: "keepalive-seed", n: 1, keys: 1000, desc: "the seed's per-key UPDATE ... WHERE key AND run_id AND unexpired on seed_lease, one client, 1000 held keys round robin"},
		{name: "keepalive-renew", n: 1, keys: 1000, desc: "lease.renew one lease at a time as data.Store.Renew sends it, one client, 1000 held keys round robin"},
		{name: "keepalive-1", n: 1, keys: 1, batch: true, desc: "lease.renew_many of the client's 1 lease per call, as data.Store.RenewMany sends it"},
		{name: "keepalive-100", n: 100, keys: 100, batch: true, desc: "lease.renew_many of the client's 100 leases in one call, as data.Store.RenewMany sends it; per lease"},
		{name: "keepalive-1000", n: 1000, keys: 1000, batch: true, desc: "lease.renew_many of the client's 1000 leases in one call, as data.Store.RenewMany sends it; per lease"},
	})
}

// keepAliveScale is how the cost of keeping leases alive grows with the
// leases held (opt-in): one client holding 1,000, 10,000 and 100,000 leases
// renews them 1000 a call (lease.renew_many), round robin, interleaved as
// keepAlive's rows are.
func keepAliveScale(ctx context.Context, r *run, w workload) ([]Result, error) {
	var ms []*kaMember
	for _, held := range []int{1000, 10_000, 100_000} {
		ms = append(ms, &kaMember{
			name: fmt.Sprintf("keepalive-scale-%d", held), n: 1000, keys: held, batch: true,
			desc: fmt.Sprintf("%d leases held by one client, renewed 1000 a call with lease.renew_many, round robin; per lease", held),
		})
	}
	return runKeepAlive(ctx, r, ms)
}

// runKeepAlive sets the members up, then measures them in turns of a
// second at most until each has had Duration, and reports one Result each.
func runKeepAlive(ctx context.Context, r *run, members []*kaMember) ([]Result, error) {
	defer func() {
		for _, m := range members {
			if m.conn != nil {
				closeConns([]*pgx.Conn{m.conn})
			}
		}
	}()
	for _, m := range members {
		if err := m.setup(ctx, r); err != nil {
			return nil, fmt.Errorf("%s: set up: %w", m.name, err)
		}
	}
	r.checkpoint(ctx)
	for _, m := range members {
		if _, err := m.slice(ctx, r, r.cfg.Warmup, false); err != nil {
			return nil, fmt.Errorf("%s: %w", m.name, err)
		}
	}
	slice := min(r.cfg.Duration, time.Second)
	for more := true; more && ctx.Err() == nil; {
		more = false
		for _, m := range members {
			if m.window >= r.cfg.Duration {
				continue
			}
			d, err := m.slice(ctx, r, min(slice, r.cfg.Duration-m.window), true)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", m.name, err)
			}
			m.window += d
			more = more || m.window < r.cfg.Duration
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make([]Result, 0, len(members))
	for _, m := range members {
		res := newResult(m.name, m.desc, &m.hist, m.window)
		res.Ops, res.OpsPerSec = m.renewals, float64(m.renewals)/m.window.Seconds()
		var notes []string
		if m.cpuOK && m.renewals > 0 {
			res.ServerCPUus = float64(m.cpu.Microseconds()) / float64(m.renewals)
			notes = append(notes, fmt.Sprintf("server CPU %.1f us", res.ServerCPUus))
		}
		if m.walOK && m.renewals > 0 {
			res.WALBytes = float64(m.wal) / float64(m.renewals)
			notes = append(notes, fmt.Sprintf("WAL %.0f bytes", res.WALBytes))
		}
		if len(notes) > 0 {
			res.Note = strings.Join(notes, ", ") + " per renewal"
		}
		out = append(out, res)
	}
	return out, nil
}

// kaMember is one way of keeping leases alive, on a connection of its own.
type kaMember struct {
	name, desc string
	n          int  // leases per call (keys is a multiple of it)
	keys       int  // leases held
	batch      bool // lease.renew_many; else one key per call

	conn     *pgx.Conn
	pid      uint32
	items    []data.Key
	runs     []uuid.UUID
	next     int
	op       func(ctx context.Context) error
	hist     Histogram
	window   time.Duration
	renewals uint64
	cpu      time.Duration
	cpuOK    bool
	wal      int64 // WAL bytes written during the recorded slices
	walOK    bool
}

// setup connects and acquires the member's leases.
func (m *kaMember) setup(ctx context.Context, r *run) error {
	conn, err := r.connect(ctx)
	if err != nil {
		return err
	}
	m.conn, m.pid = conn, conn.PgConn().PID()
	m.items = r.keys(m.name, m.keys)
	m.runs = make([]uuid.UUID, m.keys)
	accounts, sessions := make([]string, m.keys), make([]string, m.keys)
	for k, key := range m.items {
		m.runs[k] = uuid.New()
		accounts[k], sessions[k] = key.Account, key.Session
	}
	// All of them in one statement: lease.acquire (or the seed's INSERT on
	// seed_lease) per key, as many grants as keys.
	q := `SELECT count(*) FROM unnest($1::text[], $2::text[], $3::uuid[]) u(a, s, r),
		LATERAL lease.acquire(u.a, u.s, u.r, $4, 'bench') g WHERE g.run_id = u.r`
	if m.name == "keepalive-seed" {
		q = `WITH ins AS (INSERT INTO ` + r.table("seed_lease") + ` (account_id, session_id, run_id, expires_at)
			SELECT u.a, u.s, u.r, now() + $4
			  FROM unnest($1::text[], $2::text[], $3::uuid[]) u(a, s, r)
			RETURNING 1)
			SELECT count(*) FROM ins`
	}
	for lo := 0; lo < m.keys; lo += 10_000 {
		hi := min(lo+10_000, m.keys)
		var granted int
		if err := conn.QueryRow(ctx, q, accounts[lo:hi], sessions[lo:hi], m.runs[lo:hi], holdTTL).Scan(&granted); err != nil {
			return fmt.Errorf("acquire %d leases: %w", m.keys, err)
		}
		if granted != hi-lo {
			return fmt.Errorf("acquired %d of %d leases", granted, hi-lo)
		}
	}
	switch {
	case m.batch:
		m.op = m.renewMany(r)
	case m.name == "keepalive-seed":
		m.op = m.renewSeed(seedRenewSQL(r))
	default:
		m.op = m.renewOne(sqlcall.Renew, r)
	}
	return nil
}

// renewOne renews the member's next key with q (lease.renew's parameters),
// its run id a bind parameter as data.Store.Renew sends it.
func (m *kaMember) renewOne(q string, r *run) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		k, key := m.next, m.items[m.next]
		m.next = (m.next + 1) % len(m.items)
		args := sqlcall.Secret(r.callsOf(m.conn).Mode, key.Account, key.Session, m.runs[k], holdTTL)
		var exp *time.Time
		if err := m.conn.QueryRow(ctx, q, args...).Scan(&exp); err != nil {
			return fmt.Errorf("renew %s: %w", key, err)
		}
		if exp == nil {
			return fmt.Errorf("renew %s: rejected, want renewed", key)
		}
		return nil
	}
}

// renewSeed renews the member's next key with the seed's UPDATE (q), which
// must affect one row.
func (m *kaMember) renewSeed(q string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		k, key := m.next, m.items[m.next]
		m.next = (m.next + 1) % len(m.items)
		tag, err := m.conn.Exec(ctx, q, key.Account, key.Session, m.runs[k], holdTTL)
		if err == nil && tag.RowsAffected() != 1 {
			err = fmt.Errorf("renewed %d rows, want 1", tag.RowsAffected())
		}
		if err != nil {
			return fmt.Errorf("seed renew %s: %w", key, err)
		}
		return nil
	}
}

// renewMany renews all the member's leases in one lease.renew_many call.
func (m *kaMember) renewMany(r *run) func(ctx context.Context) error {
	accounts, sessions := make([]string, len(m.items)), make([]string, len(m.items))
	for k, key := range m.items {
		accounts[k], sessions[k] = key.Account, key.Session
	}
	return func(ctx context.Context) error {
		lo := m.next
		hi := lo + m.n
		m.next = hi % len(m.items)
		rows, err := m.conn.Query(ctx, sqlcall.RenewMany,
			sqlcall.Secret(r.callsOf(m.conn).Mode, accounts[lo:hi], sessions[lo:hi], m.runs[lo:hi], holdTTL)...)
		if err != nil {
			return fmt.Errorf("renew_many: %w", err)
		}
		renewed := 0
		for rows.Next() {
			var i int
			var exp *time.Time
			if err := rows.Scan(&i, &exp); err != nil {
				rows.Close()
				return fmt.Errorf("renew_many: %w", err)
			}
			if exp != nil {
				renewed++
			}
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("renew_many: %w", err)
		}
		if renewed != hi-lo {
			return fmt.Errorf("renew_many renewed %d of %d leases", renewed, hi-lo)
		}
		return nil
	}
}

// slice runs the member's calls back to back for d and returns how long it
// took; when record is set it counts them, their renewals, the server's CPU
// and the WAL written (the members take turns, so the WAL written during a
// slice is the member's, and the server's background work).
func (m *kaMember) slice(ctx context.Context, r *run, d time.Duration, record bool) (time.Duration, error) {
	wal0, walErr0 := walLSN(ctx, r.admin)
	cpu0, err0 := backendCPU(m.pid)
	start := time.Now()
	end := start.Add(d)
	for time.Now().Before(end) {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		t0 := time.Now()
		if err := m.op(ctx); err != nil {
			return 0, err
		}
		if record {
			m.hist.Record(time.Since(t0))
			m.renewals += uint64(m.n)
		}
	}
	elapsed := time.Since(start)
	cpu1, err1 := backendCPU(m.pid)
	wal1, walErr1 := walLSN(ctx, r.admin)
	if record {
		m.cpuOK = err0 == nil && err1 == nil && (m.cpuOK || m.window == 0)
		m.cpu += cpu1 - cpu0
		m.walOK = walErr0 == nil && walErr1 == nil && (m.walOK || m.window == 0)
		m.wal += wal1 - wal0
	}
	return elapsed, nil
}

// walLSN returns the server's current WAL insert position, in bytes.
func walLSN(ctx context.Context, conn *pgx.Conn) (int64, error) {
	var b int64
	err := conn.QueryRow(ctx, `SELECT (pg_current_wal_insert_lsn() - '0/0')::bigint`).Scan(&b)
	return b, err
}

// backendCPU returns the CPU time of the server process pid, read from
// /proc (the server on this machine): the scheduler's time on a CPU in ns
// (schedstat), or, without it, user+system time in clock ticks of 10 ms.
func backendCPU(pid uint32) (time.Duration, error) {
	dir := "/proc/" + strconv.FormatUint(uint64(pid), 10)
	if b, err := os.ReadFile(dir + "/schedstat"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			if ns, err := strconv.ParseInt(f[0], 10, 64); err == nil {
				return time.Duration(ns), nil
			}
		}
	}
	b, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("no command name")
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("%d fields", len(f))
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, nil
}
