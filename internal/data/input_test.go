package data_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

func TestBadInputIsRefusedAndWritesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := pgtest.New(t).Store(t)
	ok := data.Key{Account: "a", Session: "s"}
	tests := []struct {
		name   string
		key    data.Key
		ttl    time.Duration
		holder string
	}{
		{"ttl zero", ok, 0, ""},
		{"ttl negative", ok, -time.Second, ""},
		{"ttl over 24h", ok, 24*time.Hour + time.Second, ""},
		{"empty account", data.Key{Account: "", Session: "s"}, time.Minute, ""},
		{"empty session", data.Key{Account: "a", Session: ""}, time.Minute, ""},
		{"oversized account", data.Key{Account: strings.Repeat("a", 513), Session: "s"}, time.Minute, ""},
		{"oversized multibyte session", data.Key{Account: "a", Session: strings.Repeat("é", 257)}, time.Minute, ""},
		{"escape in session", data.Key{Account: "a", Session: "s\x1b[2J"}, time.Minute, ""},
		{"newline in account", data.Key{Account: "a\nb", Session: "s"}, time.Minute, ""},
		{"C1 control in session", data.Key{Account: "a", Session: "s\u009b"}, time.Minute, ""},
		{"invalid UTF-8", data.Key{Account: "a\xff", Session: "s"}, time.Minute, ""},
		{"oversized holder", ok, time.Minute, strings.Repeat("h", 257)},
		{"control in holder", ok, time.Minute, "h\x07"},
		{"right-to-left override in session", data.Key{Account: "a", Session: "s\u202eabc"}, time.Minute, ""},
		{"isolate in account", data.Key{Account: "a\u2066b", Session: "s"}, time.Minute, ""},
		{"line separator in holder", ok, time.Minute, "h\u2028"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.Acquire(ctx, tt.key, uuid.New(), tt.ttl, tt.holder)
			if !errors.Is(err, data.ErrInvalid) {
				t.Fatalf("Acquire err = %v, want ErrInvalid", err)
			}
			if strings.ContainsAny(err.Error(), "\n\x1b") {
				t.Errorf("error %q spans lines or carries an escape", err)
			}
		})
	}
	if n := len(events(t, s)); n != 0 {
		t.Errorf("bad input wrote %d events, want 0", n)
	}
	// Maximal valid ids are accepted: 512 bytes of multibyte characters.
	if _, err := s.Acquire(ctx, data.Key{Account: strings.Repeat("é", 256), Session: "s"}, uuid.New(), 24*time.Hour, ""); err != nil {
		t.Fatalf("Acquire with a 512-byte account: %v", err)
	}
}

// TestSQLRefusesBadInput calls the functions directly, as a program in another
// language would: the server enforces the same bounds with SQLSTATE 22023.
func TestSQLRefusesBadInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn := pgtest.New(t).Conn(t)
	tests := []struct {
		name, sql string
		args      []any
	}{
		{"ttl zero", `SELECT * FROM lease.acquire('a', 's', gen_random_uuid(), '0', '')`, nil},
		{"ttl negative", `SELECT * FROM lease.acquire('a', 's', gen_random_uuid(), '-1 s', '')`, nil},
		{"ttl huge", `SELECT * FROM lease.acquire('a', 's', gen_random_uuid(), '25 hours', '')`, nil},
		{"renew ttl huge", `SELECT lease.renew('a', 's', gen_random_uuid(), '1 year')`, nil},
		{"empty id", `SELECT * FROM lease.acquire('', 's', gen_random_uuid(), '1 min', '')`, nil},
		{"null id", `SELECT * FROM lease.acquire(NULL, 's', gen_random_uuid(), '1 min', '')`, nil},
		{"null run", `SELECT * FROM lease.acquire('a', 's', NULL, '1 min', '')`, nil},
		{"oversized id", `SELECT * FROM lease.acquire(repeat('x', 513), 's', gen_random_uuid(), '1 min', '')`, nil},
		{"escape in id", `SELECT * FROM lease.acquire($1, 's', gen_random_uuid(), '1 min', '')`, []any{"a\x1b[2J"}},
		{"control in holder", `SELECT * FROM lease.acquire('a', 's', gen_random_uuid(), '1 min', $1)`, []any{"x\ry"}},
		{"control in reason", `SELECT lease.force_release('a', 's', NULL, $1)`, []any{"why\n"}},
		{"C1 control in id", `SELECT * FROM lease.acquire($1, 's', gen_random_uuid(), '1 min', '')`, []any{"a\u009b31m"}},
		{"bidi override in id", `SELECT * FROM lease.acquire('a', $1, gen_random_uuid(), '1 min', '')`, []any{"s\u202eabc"}},
		{"bidi isolate in holder", `SELECT * FROM lease.acquire('a', 's', gen_random_uuid(), '1 min', $1)`, []any{"h\u2067"}},
		{"oversized holder", `SELECT * FROM lease.acquire('a', 's', gen_random_uuid(), '1 min', repeat('h', 257))`, nil},
		{"null ttl", `SELECT * FROM lease.acquire('a', 's', gen_random_uuid(), NULL, '')`, nil},
		{"release empty id", `SELECT lease.release('', 's', gen_random_uuid())`, nil},
		{"release null id", `SELECT lease.release('a', NULL, gen_random_uuid())`, nil},
		{"release oversized id", `SELECT lease.release('a', repeat('s', 513), gen_random_uuid())`, nil},
		{"release escape in id", `SELECT lease.release($1, 's', gen_random_uuid())`, []any{"a\x1b[2J"}},
		{"bidi mark in reason", `SELECT lease.force_release('a', 's', NULL, $1)`, []any{"why\u200f"}},
		{"oversized reason", `SELECT lease.force_release('a', 's', NULL, repeat('r', 513))`, nil},
		{"prune negative", `SELECT lease.prune_events('-1 day')`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := conn.Exec(ctx, tt.sql, tt.args...)
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) || pgErr.Code != "22023" {
				t.Fatalf("err = %v, want SQLSTATE 22023", err)
			}
		})
	}
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM lease.session_lease`).Scan(&n); err != nil || n != 0 {
		t.Errorf("leases after bad input = %d, %v; want 0", n, err)
	}
}
