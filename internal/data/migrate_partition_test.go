package data_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// createV3 builds the lease schema as version 3 left it, the last with an
// unpartitioned history, from testdata/v3 (git show 4abe894:sql/<file>),
// applied in version 3's order by the superuser.
func createV3(t testing.TB, conn *pgx.Conn) {
	createOld(t, conn, 3, "prelude.sql", "schema.sql", "functions.sql", "preempt.sql", "queue.sql",
		"handover.sql", "triggers.sql", "roles.sql", "members.sql")
}

// oldHistory writes a history through the old schema's own functions (200
// sessions acquired, half released) and, as the superuser, events 3 and 10
// days old, then returns every event's id, key, kind and time, by id.
func oldHistory(t testing.TB, conn *pgx.Conn) []data.Event {
	t.Helper()
	ctx := context.Background()
	if _, err := conn.Exec(ctx, `
		SELECT lease.acquire('acme', 's' || i, ('00000000-0000-4000-8000-' || lpad(i::text, 12, '0'))::uuid, '1 hour', 'desk')
		  FROM generate_series(1, 200) i;
		SELECT lease.release('acme', 's' || i, ('00000000-0000-4000-8000-' || lpad(i::text, 12, '0'))::uuid)
		  FROM generate_series(1, 200, 2) i;
		INSERT INTO lease.event (at, kind, account_id, session_id)
		SELECT clock_timestamp() - d * interval '1 day', 'acquired', 'acme', 'old' || d FROM unnest(ARRAY[3, 10]) d`); err != nil {
		t.Fatalf("old history: %v", err)
	}
	rows, err := conn.Query(ctx, `SELECT id, at, kind::text, account_id, session_id FROM lease.event ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (data.Event, error) {
		var e data.Event
		return e, r.Scan(&e.ID, &e.At, &e.Kind, &e.Key.Account, &e.Key.Session)
	})
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// relfiles returns the files (relfilenode) of lease.event and of its
// indexes, by index name, as the old schema left them.
func relfiles(t testing.TB, conn *pgx.Conn) map[string]uint32 {
	t.Helper()
	return fileNodes(t, conn, `
		SELECT 'table', relfilenode FROM pg_class WHERE oid = 'lease.event'::regclass
		UNION ALL
		SELECT c.relname::text, c.relfilenode FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
		 WHERE i.indrelid = 'lease.event'::regclass`)
}

// fileNodes runs query, which reads names and their files (relfilenode),
// into a map.
func fileNodes(t testing.TB, conn *pgx.Conn, query string) map[string]uint32 {
	t.Helper()
	rows, err := conn.Query(context.Background(), query)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]uint32{}
	for rows.Next() {
		var name string
		var file uint32
		if err := rows.Scan(&name, &file); err != nil {
			t.Fatal(err)
		}
		out[name] = file
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestMigratePartitionsTheHistoryInPlace: a version-2 and a
// version-3 database with history migrate to the partitioned history in
// place: the old table is its first partition (the same file, its indexes
// the same files: nothing copied or rebuilt), every old event reads back by
// id and by session, the next transition's id is above them all, and a
// second migrate changes nothing.
func TestMigratePartitionsTheHistoryInPlace(t *testing.T) {
	t.Parallel()
	for name, create := range map[string]func(testing.TB, *pgx.Conn){"version 2": createV2, "version 3": createV3} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := pgtest.NewEmpty(t)
			conn := db.Conn(t)
			create(t, conn)
			old := oldHistory(t, conn)
			files := relfiles(t, conn)
			start := time.Now()
			for i := range 2 {
				if err := data.Migrate(ctx, conn); err != nil {
					t.Fatalf("Migrate #%d: %v", i+1, err)
				}
			}
			t.Logf("%d events: two migrations in %v", len(old), time.Since(start))
			var kind string
			if err := conn.QueryRow(ctx, `SELECT relkind::text FROM pg_class WHERE oid = 'lease.event'::regclass`).Scan(&kind); err != nil || kind != "p" {
				t.Fatalf("lease.event's relkind after the migration = %q, %v; want p (partitioned)", kind, err)
			}
			first := partitionOf(t, conn, old[0].ID)
			var file uint32
			if err := conn.QueryRow(ctx, `SELECT relfilenode FROM pg_class WHERE oid = $1::regclass`, first).Scan(&file); err != nil || file != files["table"] {
				t.Errorf("the first partition %s is file %d (%v), want the old table's %d: copied", first, file, err, files["table"])
			}
			after := relfiles(t, conn) // now the parent's: none of its own
			for idx, want := range files {
				if idx == "table" {
					continue
				}
				var got uint32
				if err := conn.QueryRow(ctx, `SELECT c.relfilenode FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
					WHERE i.indrelid = $1::regclass AND c.relfilenode = $2`, first, want).Scan(&got); err != nil {
					t.Errorf("old index %s (file %d) is not one of %s's indexes: rebuilt (%v; parent's %v)", idx, want, first, err, after)
				}
			}
			s := db.Store(t)
			for _, e := range old {
				var got data.Event
				if err := conn.QueryRow(ctx, `SELECT id, at, kind::text, account_id, session_id FROM lease.event WHERE id = $1`, e.ID).
					Scan(&got.ID, &got.At, &got.Kind, &got.Key.Account, &got.Key.Session); err != nil ||
					!got.At.Equal(e.At) || got.Kind != e.Kind || got.Key.Account != e.Key.Account || got.Key.Session != e.Key.Session {
					t.Fatalf("event %d after the migration = %+v, %v; want %+v", e.ID, got, err, e)
				}
				if partitionOf(t, conn, e.ID) != first {
					t.Errorf("event %d is not in the first partition %s", e.ID, first)
				}
			}
			for _, k := range []data.Key{{Account: "acme", Session: "s1"}, {Account: "acme", Session: "s2"}, {Account: "acme", Session: "old10"}} {
				var want []int64
				for _, e := range old {
					if e.Key == k {
						want = append([]int64{e.ID}, want...)
					}
				}
				evs, err := s.EventsFor(ctx, k, 100)
				var got []int64
				for _, e := range evs {
					got = append(got, e.ID)
				}
				if err != nil || len(want) == 0 || !slices.Equal(got, want) {
					t.Errorf("EventsFor(%s) after the migration = %v, %v; want %v", k, got, err, want)
				}
			}
			var all []int64
			for e, err := range s.Events(ctx, 0) {
				if err != nil {
					t.Fatal(err)
				}
				all = append(all, e.ID)
			}
			if len(all) != len(old) {
				t.Fatalf("Events after the migration: %d events, want %d", len(all), len(old))
			}
			top := slices.MaxFunc(old, func(a, b data.Event) int { return int(a.ID - b.ID) }).ID
			if _, err := s.Acquire(ctx, data.Key{Account: "acme", Session: "new"}, uuid.New(), time.Minute, "desk"); err != nil {
				t.Fatal(err)
			}
			evs, err := s.EventsFor(ctx, data.Key{Account: "acme", Session: "new"}, 1)
			if err != nil || len(evs) != 1 || evs[0].ID <= top {
				t.Fatalf("the next transition's event = %+v, %v; want an id above the old history's %d", evs, err, top)
			}
		})
	}
}

// BenchmarkMigrateBigHistory times the upgrade of a version-3 database
// whose history holds 1,000,000 events (written in bulk) to the partitioned
// history: the old table becomes the first partition in place, and ATTACH
// reads it once to check its bound while holding its lock (transitions wait
// for that read). Compared in the same run with the next migrate of the same
// database, which finds it current (functions refreshed).
//
//	go test ./data -run '^$' -bench BenchmarkMigrateBigHistory -benchtime 1x
func BenchmarkMigrateBigHistory(b *testing.B) {
	ctx := context.Background()
	for range b.N {
		b.StopTimer()
		db := pgtest.NewEmpty(b)
		conn := db.Conn(b)
		createV3(b, conn)
		if _, err := conn.Exec(ctx, `
			INSERT INTO lease.event (at, kind, account_id, session_id, run_id, fence, expires_at, holder)
			SELECT clock_timestamp() - (1000000 - j) * interval '1 ms', 'taken_over', 'bench', 's' || (j % 10000),
			       gen_random_uuid(), j, clock_timestamp(), 'device'
			  FROM generate_series(1, 1000000) j`); err != nil {
			b.Fatal(err)
		}
		if _, err := conn.Exec(ctx, `VACUUM ANALYZE lease.event`); err != nil {
			b.Fatal(err)
		}
		var size int64
		if err := conn.QueryRow(ctx, `SELECT pg_total_relation_size('lease.event')`).Scan(&size); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		if err := data.Migrate(ctx, conn); err != nil {
			b.Fatal(err)
		}
		upgrade := time.Since(start)
		start = time.Now()
		if err := data.Migrate(ctx, conn); err != nil {
			b.Fatal(err)
		}
		current := time.Since(start)
		b.ReportMetric(float64(upgrade.Milliseconds()), "upgrade-ms")
		b.ReportMetric(float64(current.Milliseconds()), "current-ms")
		b.ReportMetric(float64(size)/(1<<20), "history-MiB")
	}
}

// TestUpgradedHistoryPartitionCanBeDropped: version 4 made an
// older history the first partition of a new lease.event, and
// lease.event_json of the old table's row type stayed behind with it;
// nothing called it, but it kept that partition from being dropped, so
// maintain --keep failed (2BP01) once the partition was old enough, and
// migrate's check for foreign objects took it for one. Migrate drops it.
func TestUpgradedHistoryPartitionCanBeDropped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.NewEmpty(t)
	conn := db.Conn(t)
	createV3(t, conn)
	for i := range 2 {
		if err := data.Migrate(ctx, conn); err != nil {
			t.Fatalf("Migrate #%d: %v", i+1, err)
		}
	}
	var part string
	if err := conn.QueryRow(ctx, `SELECT c.oid::regclass::text FROM pg_class c
		WHERE c.relnamespace = 'lease'::regnamespace AND c.relname LIKE 'event\_until\_%'`).Scan(&part); err != nil {
		t.Fatalf("the partition the version-3 history became: %v", err)
	}
	// What drop_event_partitions does with it once it is older than --keep.
	if _, err := conn.Exec(ctx, `ALTER TABLE lease.event DETACH PARTITION `+part+`; DROP TABLE `+part); err != nil {
		t.Errorf("drop %s: %v", part, err)
	}
}
