package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// The month of history (the target), scaled: historyMonthDays daily
// partitions of Config.MonitorLeases events each (--monitor-leases, 100,000
// by default: 1/864 of a day at 1000 transitions/s, which would be 86.4 M
// rows, 2.6 G a month: too many for the disk), written in bulk (generate_series) into two tables of the
// scratch schema shaped as lease.event: one partitioned as lease.event is
// (a partition per UTC day with its unique id index, the three partitioned
// indexes, an empty first partition from MINVALUE and a DEFAULT one), one
// plain (primary key on id and the same three indexes), holding the same
// rows. Nothing of lease.event itself is touched. Then, on both:
//
//   - the probes, historyMonthProbes times each, alternating between the
//     tables: an idle poll (id > the newest, LIMIT 1000), a catch-up of 1000
//     events from 15 days ago, the detail view (one session's newest 50 by
//     id), the timeline (50 lanes' last 15 minutes) and a scrub step (the
//     last event of each of 50 lanes at or before an instant), each planned
//     with its values as the data package's history reads are; each result
//     notes the pages the read touched and its planning time (EXPLAIN
//     ANALYZE BUFFERS);
//   - retention of historyMonthDrops days, one day at a time: on the
//     partitioned table DETACH and DROP of the oldest day's partition
//     (history-month-drop-day), on the plain one DELETE of the same day's
//     rows, what prune_events does (history-month-delete-day), and then the
//     VACUUM that DELETE leaves to do (history-month-vacuum);
//   - the tables' sizes (heap and indexes) before and after, and whether
//     the drop rewrote any partition it kept (their files are compared).
//
// Reads and drops run without other traffic: the drop's lock on the parent
// (ACCESS EXCLUSIVE for an instant) is not measured against live writers.
const (
	historyMonthDays   = 30
	historyMonthDrops  = 3
	historyMonthProbes = 200
	historyMonthLanes  = 50
	historyMonthKeys   = 10_000
)

// historyMonth is the history-month workload.
func historyMonth(ctx context.Context, r *run, w workload) ([]Result, error) {
	perDay := r.cfg.MonitorLeases
	m := &monthTables{r: r, parts: r.table("event_month"), flat: r.table("event_flat"), perDay: perDay}
	r.progress(fmt.Sprintf("%s: writing %d days of %d events into a partitioned and a plain table", w.name, historyMonthDays, perDay))
	if err := m.create(ctx); err != nil {
		return nil, err
	}
	r.checkpoint(ctx)
	res, err := m.probes(ctx, w.name)
	if err != nil {
		return nil, err
	}
	drops, err := m.retention(ctx, w.name)
	if err != nil {
		return nil, err
	}
	return append(res, drops...), nil
}

// monthTables are the workload's two tables and what it knows of them.
type monthTables struct {
	r           *run
	parts, flat string // qualified names
	perDay      int
	day0, end   time.Time // the first day's start, the history's end
}

// exec runs statements on the admin connection, one at a time.
func (m *monthTables) exec(ctx context.Context, stmts ...string) error {
	for _, s := range stmts {
		if _, err := m.r.admin.Exec(ctx, s); err != nil {
			return fmt.Errorf("history-month: %w", err)
		}
	}
	return nil
}

func (m *monthTables) partName(i int) string { return m.r.table(fmt.Sprintf("event_month_%02d", i)) }

func (m *monthTables) create(ctx context.Context) error {
	if err := m.r.admin.QueryRow(ctx, `SELECT date_trunc('day', clock_timestamp(), 'UTC') - $1 * interval '1 day'`,
		historyMonthDays-1).Scan(&m.day0); err != nil {
		return fmt.Errorf("history-month: %w", err)
	}
	m.end = m.day0.Add(historyMonthDays * 24 * time.Hour)
	stmts := []string{
		fmt.Sprintf(`CREATE TABLE %s (LIKE lease.event INCLUDING DEFAULTS) PARTITION BY RANGE (at)`, m.parts),
		fmt.Sprintf(`CREATE TABLE %s (LIKE lease.event INCLUDING DEFAULTS)`, m.flat),
	}
	for i := range historyMonthDays {
		from := m.day0.Add(time.Duration(i) * 24 * time.Hour)
		stmts = append(stmts, fmt.Sprintf(`CREATE TABLE %s PARTITION OF %s FOR VALUES FROM ('%s') TO ('%s')`,
			m.partName(i), m.parts, from.Format(time.RFC3339), from.Add(24*time.Hour).Format(time.RFC3339)))
	}
	n := historyMonthDays * m.perDay
	stmts = append(stmts,
		fmt.Sprintf(`CREATE TABLE %s PARTITION OF %s FOR VALUES FROM (MINVALUE) TO ('%s')`, m.r.table("event_month_floor"), m.parts, m.day0.Format(time.RFC3339)),
		fmt.Sprintf(`CREATE TABLE %s PARTITION OF %s DEFAULT`, m.r.table("event_month_default"), m.parts),
		fmt.Sprintf(`INSERT INTO %s (id, at, kind, account_id, session_id, run_id, prev_run_id, fence, expires_at, holder, actor)
			SELECT j, '%s'::timestamptz + (j - 1) * (interval '%d days' / %d),
			       CASE WHEN j %% 10 = 0 THEN 'renew_rejected' ELSE 'taken_over' END,
			       'bench', 's' || (1 + (j * 7919) %% %d), gen_random_uuid(), gen_random_uuid(), j,
			       '%s'::timestamptz + (j - 1) * (interval '%d days' / %d) + interval '30 s', 'device-' || (j %% 50), 'bench'
			  FROM generate_series(1::bigint, %d) j`,
			m.parts, m.day0.Format(time.RFC3339), historyMonthDays, n, historyMonthKeys, m.day0.Format(time.RFC3339), historyMonthDays, n, n),
		fmt.Sprintf(`INSERT INTO %s SELECT * FROM %s`, m.flat, m.parts),
		fmt.Sprintf(`ALTER TABLE %s ADD PRIMARY KEY (id)`, m.flat),
	)
	for i := range historyMonthDays {
		stmts = append(stmts, fmt.Sprintf(`CREATE UNIQUE INDEX ON %s (id)`, m.partName(i)))
	}
	stmts = append(stmts,
		fmt.Sprintf(`CREATE UNIQUE INDEX ON %s (id)`, m.r.table("event_month_floor")),
		fmt.Sprintf(`CREATE UNIQUE INDEX ON %s (id)`, m.r.table("event_month_default")))
	for _, cols := range []string{"account_id, session_id, id", "at", "account_id, session_id, at, id"} {
		stmts = append(stmts, fmt.Sprintf(`CREATE INDEX ON %s (%s)`, m.parts, cols), fmt.Sprintf(`CREATE INDEX ON %s (%s)`, m.flat, cols))
	}
	stmts = append(stmts, `VACUUM ANALYZE `+m.parts, `VACUUM ANALYZE `+m.flat)
	return m.exec(ctx, stmts...)
}

// size is a table's heap and indexes, for a partitioned one its partitions'.
func (m *monthTables) size(ctx context.Context, table string) (int64, error) {
	var n int64
	err := m.r.admin.QueryRow(ctx, `SELECT coalesce((SELECT sum(pg_total_relation_size(relid)) FROM pg_partition_tree($1::regclass) WHERE isleaf),
		pg_total_relation_size($1::regclass))::bigint`, table).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("history-month: size of %s: %w", table, err)
	}
	return n, nil
}

// monthProbe is one read of the history, on either table.
type monthProbe struct {
	name, desc string
	sql        string // %[1]s: the table
	args       func(m *monthTables, i int) []any
}

func monthProbes() []monthProbe {
	lanes := make([]string, historyMonthLanes)
	for i := range lanes {
		lanes[i] = fmt.Sprintf("s%d", 1+i*(historyMonthKeys/historyMonthLanes))
	}
	return []monthProbe{
		{"poll", "idle poll: id > the newest, LIMIT 1000",
			`SELECT id, at, kind FROM %[1]s WHERE id > $1 ORDER BY id LIMIT 1000`,
			func(m *monthTables, _ int) []any { return []any{int64(historyMonthDays * m.perDay)} }},
		{"catchup", "catch-up: the 1000 events after one of 15 days ago, by id",
			`SELECT id, at, kind FROM %[1]s WHERE id > $1 ORDER BY id LIMIT 1000`,
			func(m *monthTables, _ int) []any { return []any{int64(historyMonthDays * m.perDay / 2)} }},
		{"session", "detail view: one session's newest 50 events, by id",
			`SELECT id, at, kind FROM %[1]s WHERE account_id = 'bench' AND session_id = $1 ORDER BY id DESC LIMIT 50`,
			func(_ *monthTables, i int) []any { return []any{fmt.Sprintf("s%d", 1+i%historyMonthKeys)} }},
		{"timeline", "timeline: 50 lanes' last 15 minutes, by time",
			`SELECT e.id, e.at, e.kind FROM %[1]s e JOIN unnest($1::text[]) k(s) ON e.session_id = k.s
			  WHERE e.account_id = 'bench' AND e.at >= $2 AND e.at < $3 ORDER BY e.at, e.id`,
			func(m *monthTables, _ int) []any { return []any{lanes, m.end.Add(-15 * time.Minute), m.end} }},
		{"scrub", "scrub step: each of 50 lanes' last event at or before an instant 3 days ago",
			`SELECT k.s, e.id FROM unnest($1::text[]) k(s) CROSS JOIN LATERAL (
			   SELECT e.id FROM %[1]s e WHERE e.account_id = 'bench' AND e.session_id = k.s AND e.at <= $2
			    ORDER BY e.at DESC, e.id DESC LIMIT 1) e`,
			func(m *monthTables, _ int) []any { return []any{lanes, m.end.Add(-72 * time.Hour)} }},
	}
}

// probes times each probe on both tables, alternating, and notes the pages
// each touched.
func (m *monthTables) probes(ctx context.Context, name string) ([]Result, error) {
	var out []Result
	for _, p := range monthProbes() {
		m.r.progress(fmt.Sprintf("%s: %s", name, p.desc))
		hs := map[string]*Histogram{m.parts: {}, m.flat: {}}
		for i := range historyMonthProbes {
			for _, table := range []string{m.parts, m.flat} {
				start := time.Now()
				// Planned each time with its values, as the data package's
				// history reads are (data.customPlan).
				rows, err := m.r.admin.Query(ctx, fmt.Sprintf(p.sql, table), append([]any{pgx.QueryExecModeExec}, p.args(m, i)...)...)
				if err == nil {
					rows.Close()
					err = rows.Err()
				}
				if err != nil {
					return nil, fmt.Errorf("history-month: %s: %w", p.name, err)
				}
				hs[table].Record(time.Since(start))
			}
		}
		for _, t := range []struct{ table, suffix, desc string }{
			{m.parts, "partitioned", "30 daily partitions"}, {m.flat, "plain", "one plain table, the same rows"},
		} {
			pages, planning, err := m.pages(ctx, fmt.Sprintf(p.sql, t.table), p.args(m, 0))
			if err != nil {
				return nil, err
			}
			res := newResult(fmt.Sprintf("%s-%s-%s", name, p.name, t.suffix), p.desc+" ("+t.desc+")", hs[t.table], 0)
			res.Note = fmt.Sprintf("%d pages, planned in %.2f ms", pages, planning)
			out = append(out, res)
		}
	}
	return out, nil
}

// pages is how many buffers a read touched and how long it took to plan, in
// milliseconds (EXPLAIN ANALYZE BUFFERS).
func (m *monthTables) pages(ctx context.Context, sql string, args []any) (int64, float64, error) {
	rows, err := m.r.admin.Query(ctx, "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) "+sql, args...)
	if err != nil {
		return 0, 0, fmt.Errorf("history-month: explain: %w", err)
	}
	doc, err := pgx.CollectExactlyOneRow(rows, pgx.RowTo[[]map[string]any])
	if err != nil || len(doc) == 0 {
		return 0, 0, fmt.Errorf("history-month: explain: %v", err)
	}
	plan, _ := doc[0]["Plan"].(map[string]any)
	hit, _ := plan["Shared Hit Blocks"].(float64)
	read, _ := plan["Shared Read Blocks"].(float64)
	planning, _ := doc[0]["Planning Time"].(float64)
	return int64(hit + read), planning, nil
}

// retention drops historyMonthDrops days from each table, one at a time:
// the partitioned one's partition, the plain one's rows (DELETE), then
// VACUUMs the plain one.
func (m *monthTables) retention(ctx context.Context, name string) ([]Result, error) {
	m.r.progress(fmt.Sprintf("%s: dropping %d days vs deleting them", name, historyMonthDrops))
	partsBefore, err := m.size(ctx, m.parts)
	if err != nil {
		return nil, err
	}
	flatBefore, err := m.size(ctx, m.flat)
	if err != nil {
		return nil, err
	}
	files := func() (string, error) { // the kept partitions' files, in order
		var s string
		err := m.r.admin.QueryRow(ctx, `SELECT string_agg(c.relfilenode::text, ',' ORDER BY c.relname)
			FROM pg_partition_tree($1::regclass) t JOIN pg_class c ON c.oid = t.relid
			WHERE t.isleaf AND c.relname >= $2`, m.parts, fmt.Sprintf("event_month_%02d", historyMonthDrops)).Scan(&s)
		return s, err
	}
	keptBefore, err := files()
	if err != nil {
		return nil, fmt.Errorf("history-month: %w", err)
	}
	drop, del := &Histogram{}, &Histogram{}
	for i := range historyMonthDrops {
		start := time.Now()
		if err := m.exec(ctx, fmt.Sprintf(`BEGIN; ALTER TABLE %s DETACH PARTITION %s; DROP TABLE %s; COMMIT`, m.parts, m.partName(i), m.partName(i))); err != nil {
			return nil, err
		}
		drop.Record(time.Since(start))
		until := m.day0.Add(time.Duration(i+1) * 24 * time.Hour)
		start = time.Now()
		if _, err := m.r.admin.Exec(ctx, fmt.Sprintf(`DELETE FROM %s WHERE at < $1`, m.flat), until); err != nil {
			return nil, fmt.Errorf("history-month: delete: %w", err)
		}
		del.Record(time.Since(start))
	}
	keptAfter, err := files()
	if err != nil {
		return nil, fmt.Errorf("history-month: %w", err)
	}
	partsAfter, err := m.size(ctx, m.parts)
	if err != nil {
		return nil, err
	}
	flatDeleted, err := m.size(ctx, m.flat)
	if err != nil {
		return nil, err
	}
	vac := &Histogram{}
	start := time.Now()
	if err := m.exec(ctx, `VACUUM `+m.flat); err != nil {
		return nil, err
	}
	vac.Record(time.Since(start))
	flatVacuumed, err := m.size(ctx, m.flat)
	if err != nil {
		return nil, err
	}
	rewrite := "the kept partitions' files unchanged: nothing rewritten"
	if keptAfter != keptBefore {
		rewrite = "a kept partition's file changed: REWRITTEN"
	}
	day := fmt.Sprintf("a day of %d events", m.perDay)
	return []Result{
		withNote(newResult(name+"-drop-day", "retention by partition: DETACH and DROP of the oldest day's partition, "+day, drop, 0),
			fmt.Sprintf("%s -> %s; %s", mib(partsBefore), mib(partsAfter), rewrite)),
		withNote(newResult(name+"-delete-day", "retention by DELETE (prune_events) of the same day's rows from the plain table, "+day, del, 0),
			fmt.Sprintf("%s -> %s (dead rows stay until VACUUM)", mib(flatBefore), mib(flatDeleted))),
		withNote(newResult(name+"-vacuum", "the VACUUM that the DELETEs leave to do on the plain table", vac, 0),
			fmt.Sprintf("%s after: the space is reused, not returned", mib(flatVacuumed))),
	}, nil
}

func withNote(r Result, note string) Result {
	r.Note = note
	return r
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
