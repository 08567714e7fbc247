package data_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	leasesql "github.com/leasetop/leasetop/sql"
)

// acquireWithoutGate returns lease.acquire's definition as
// nogate.acquire, without the queue's gate: the function as it was
// before the queue, to compare in one run.
func acquireWithoutGate(tb testing.TB) string {
	tb.Helper()
	var fns string
	for _, f := range leasesql.Files() {
		if f.Name == "acquire.sql" {
			fns = f.SQL
		}
	}
	def := regexp.MustCompile(`(?s)CREATE OR REPLACE FUNCTION lease\.acquire\(.*?\n\$fn\$;`).FindString(fns)
	gate := regexp.MustCompile(`(?s)    -- The queue \(queue\.sql\).*?END IF;\n`)
	granted := regexp.MustCompile(`(?s)        IF latest IS NOT NULL THEN\n.*?END IF;\n`)
	if def == "" || !gate.MatchString(def) || !granted.MatchString(def) {
		tb.Fatal("lease.acquire's queue gate not found: update acquireWithoutGate")
	}
	def = gate.ReplaceAllString(def, "")
	def = granted.ReplaceAllString(def, "")
	// Another schema, the same name: the body qualifies its parameters
	// with the function's name (acquire.account_id).
	return "CREATE SCHEMA nogate; " + strings.Replace(def, "FUNCTION lease.acquire(", "FUNCTION nogate.acquire(", 1)
}

// BenchmarkAcquireQueueGate measures what the queue's gate in lease.acquire
// costs a session without a queue: acquire+release cycles on free keys with
// lease.acquire and with a copy without the gate, interleaved, and reports
// the ratio of their times per cycle.
//
//	go test ./data -run '^$' -bench AcquireQueueGate -benchtime 5000x
func BenchmarkAcquireQueueGate(b *testing.B) {
	ctx := context.Background()
	db := pgtest.New(b)
	pool := db.Pool(b)
	if _, err := pool.Exec(ctx, acquireWithoutGate(b)); err != nil {
		b.Fatal(err)
	}
	cycle := func(fn string, i int) error {
		s := fmt.Sprintf("cycle-%d", i%64)
		run := uuid.New()
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+fn+`('bench', $1, $2, '1 minute', 'bench')`, s, run).Scan(&n); err != nil || n != 1 {
			return fmt.Errorf("%s: %d rows, %v", fn, n, err)
		}
		_, err := pool.Exec(ctx, `SELECT lease.release('bench', $1, $2)`, s, run)
		return err
	}
	fns := []string{"nogate.acquire", "lease.acquire"}
	spent := make([]time.Duration, len(fns))
	for _, fn := range fns {
		if err := cycle(fn, 0); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := range b.N {
		for j := range fns {
			k := (i + j) % len(fns)
			t0 := time.Now()
			if err := cycle(fns[k], i); err != nil {
				b.Fatal(err)
			}
			spent[k] += time.Since(t0)
		}
	}
	b.ReportMetric(float64(spent[0].Microseconds())/float64(b.N), "us/cycle-nogate")
	b.ReportMetric(float64(spent[1].Microseconds())/float64(b.N), "us/cycle-gate")
	b.ReportMetric(float64(spent[1])/float64(spent[0]), "ratio")
}
