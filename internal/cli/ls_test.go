package cli_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

func TestLs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	conn := db.Conn(t)
	out, errOut, code := leasetop(ctx, db.URL, "ls")
	if code != 0 || out != "no leases held\n" {
		t.Fatalf("ls on empty: code %d out %q err %q", code, out, errOut)
	}
	r1 := acquire(t, conn, "acme", "chat-1", "1 min", "device one")
	acquire(t, conn, "acme", "chat-0", "200 ms", "dev-0")
	pgtest.WaitExpired(t, conn, data.Key{Account: "acme", Session: "chat-0"})
	insertHostileRow(t, conn)

	out, errOut, code = leasetop(ctx, db.URL, "ls")
	if code != 0 {
		t.Fatalf("ls: code %d err %q", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "ACCOUNT") {
		t.Fatalf("ls printed %d lines, want a header and 3 leases:\n%s", len(lines), out)
	}
	if !strings.Contains(lines[1], "chat-0") || !strings.Contains(lines[1], "expired") {
		t.Errorf("line for chat-0 = %q, want it sorted first and expired", lines[1])
	}
	if !strings.Contains(lines[2], r1.String()) || !strings.Contains(lines[2], "device one") || !strings.Contains(lines[2], "s ") {
		t.Errorf("line for chat-1 = %q, want its full run id, holder and time left", lines[2])
	}
	if strings.ContainsAny(out, "\x1b\x07\u009b\u202e") || !strings.Contains(out, `evil\x1b[2J`) {
		t.Errorf("ls text output is not inert:\n%q", out)
	}
}

func TestLsJSON(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	conn := db.Conn(t)
	r := acquire(t, conn, "acme", "chat-1", "1 min", "dev")
	out, errOut, code := leasetop(ctx, db.URL, "ls", "--json")
	if code != 0 {
		t.Fatalf("ls --json: code %d err %q", code, errOut)
	}
	var got struct {
		ServerTime time.Time `json:"server_time"`
		Leases     []struct {
			AccountID        string    `json:"account_id"`
			SessionID        string    `json:"session_id"`
			RunID            uuid.UUID `json:"run_id"`
			Holder           string    `json:"holder"`
			Fence            int64     `json:"fence"`
			ExpiresAt        time.Time `json:"expires_at"`
			RemainingSeconds float64   `json:"remaining_seconds"`
			Expired          bool      `json:"expired"`
		} `json:"leases"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("ls --json is not JSON: %v\n%s", err, out)
	}
	if len(got.Leases) != 1 {
		t.Fatalf("leases = %d, want 1", len(got.Leases))
	}
	l := got.Leases[0]
	if l.AccountID != "acme" || l.SessionID != "chat-1" || l.RunID != r || l.Holder != "dev" || l.Expired {
		t.Errorf("lease = %+v", l)
	}
	if want := l.ExpiresAt.Sub(got.ServerTime).Seconds(); l.RemainingSeconds < 50 || l.RemainingSeconds > 60 || l.RemainingSeconds != want {
		t.Errorf("remaining_seconds = %v, want expires_at - server_time = %v (about 60)", l.RemainingSeconds, want)
	}
}

// insertHostileRow writes a row the schema would refuse: a foreign or older
// table, or a superuser's mistake. Readers must not trust the database.
func insertHostileRow(t *testing.T, conn *pgx.Conn) {
	t.Helper()
	ctx := context.Background()
	if _, err := conn.Exec(ctx, `ALTER DOMAIN lease.id_text DROP CONSTRAINT id_text_check;
		ALTER DOMAIN lease.holder_text DROP CONSTRAINT holder_text_check`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO lease.session_lease VALUES
		($1, $2, gen_random_uuid(), $3, 999, clock_timestamp(), clock_timestamp(), clock_timestamp() + interval '1 min')`,
		"evil\x1b[2J", "s\x1b]0;pwned\x07", "h\u009b31m\u202eabc"); err != nil {
		t.Fatal(err)
	}
}
