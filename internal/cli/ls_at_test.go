package cli_test

import (
	"context"
	"encoding/json"
	"net"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/pgserver"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// lsAtJSON is ls --at --json's output, the fields the test checks.
type lsAtJSON struct {
	AsOf         time.Time `json:"as_of"`
	HistoryStart time.Time `json:"history_start"`
	Leases       []struct {
		AccountID   string     `json:"account_id"`
		SessionID   string     `json:"session_id"`
		RunID       uuid.UUID  `json:"run_id"`
		Holder      string     `json:"holder"`
		Fence       int64      `json:"fence"`
		ExpiresAt   *time.Time `json:"expires_at"`
		ExpiryKnown bool       `json:"expiry_known"`
		Expired     bool       `json:"expired"`
	} `json:"leases"`
}

// onServer returns dsn with its host and port moved to srv (a standby),
// keeping its role and database.
func onServer(t *testing.T, dsn string, srv *pgserver.Server) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = net.JoinHostPort("127.0.0.1", strconv.Itoa(srv.Port()))
	return u.String()
}

// TestLsAtAgreesWithTheHistory: ls --at, the real command, says
// who held the session at the instants just before and at each event of a
// known history (acquire, renew, expiry, zombie renewals, takeover, forced
// release, expiry without successor), as the superuser, as a lease_reader
// login, and as a lease_reader on a hot standby, on the database clock. An
// instant older than the history kept (after prune_events) is one line,
// exit 2, nothing on stdout.
func TestLsAtAgreesWithTheHistory(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	standby := pgtest.Standby(t)
	h := pgtest.BuildKnownHistory(t, db, db.Store(t))
	reader := db.ReaderURL(t)
	pgtest.WaitReplayed(t, standby)
	logins := []struct{ name, dsn string }{
		{"superuser", db.URL},
		{"lease_reader", reader},
		{"lease_reader on a standby", onServer(t, reader, standby)},
	}
	for _, l := range logins {
		t.Run(l.name, func(t *testing.T) {
			for _, p := range h.Probes {
				out, errOut, code := leasetop(ctx, l.dsn, "ls", "--at", p.At.Format(time.RFC3339Nano), "--json")
				if code != 0 {
					t.Fatalf("%s: ls --at: code %d err %q", p.Name, code, errOut)
				}
				var got lsAtJSON
				if err := json.Unmarshal([]byte(out), &got); err != nil {
					t.Fatalf("%s: ls --at --json: %v\n%s", p.Name, err, out)
				}
				if !got.AsOf.Equal(p.At) || !got.HistoryStart.Equal(h.Start) {
					t.Errorf("%s: as_of %v history_start %v, want %v and %v", p.Name, got.AsOf, got.HistoryStart, p.At, h.Start)
				}
				var found bool
				for _, le := range got.Leases {
					if le.AccountID != h.Key.Account || le.SessionID != h.Key.Session {
						t.Errorf("%s: lease on %s/%s, want only %v's", p.Name, le.AccountID, le.SessionID, h.Key)
						continue
					}
					found = true
					if !p.Held {
						t.Errorf("%s: run %v holds it, want nobody", p.Name, le.RunID)
						continue
					}
					if le.RunID != p.Run || le.Fence != p.Fence || le.Expired != p.Expired || le.ExpiryKnown != p.ExpiryKnown ||
						le.ExpiresAt == nil || !le.ExpiresAt.Equal(p.ExpiresAt) {
						t.Errorf("%s: got run %v fence %d expired %v expires %v (known %v), want run %v fence %d expired %v expires %v (known %v)",
							p.Name, le.RunID, le.Fence, le.Expired, le.ExpiresAt, le.ExpiryKnown, p.Run, p.Fence, p.Expired, p.ExpiresAt, p.ExpiryKnown)
					}
				}
				if p.Held && !found {
					t.Errorf("%s: nobody holds it, want run %v fence %d", p.Name, p.Run, p.Fence)
				}
			}
		})
	}

	// The text: the takeover's row names run B's label, its fence and TTL left.
	at := h.Events[2].At
	out, errOut, code := leasetop(ctx, reader, "ls", "--at", at.Format(time.RFC3339Nano))
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 3 || !strings.HasPrefix(lines[0], "as of "+at.UTC().Format("2006-01-02T15:04:05.000000Z")) ||
		!strings.Contains(lines[2], "run-b") || !strings.Contains(lines[2], strconv.FormatInt(h.Events[2].Fence, 10)) {
		t.Errorf("ls --at (text): code %d err %q out:\n%s\nwant the as-of line, a header and run-b's lease", code, errOut, out)
	}

	// Filters: the session asked about, or nothing for another one.
	out, errOut, code = leasetop(ctx, reader, "ls", "--at", at.Format(time.RFC3339Nano), "--account", "acct", "--session", "conv,other")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); code != 0 || len(lines) != 3 || !strings.Contains(lines[2], "run-b") {
		t.Errorf("ls --at --account acct --session conv,other: code %d err %q out:\n%s\nwant run-b's lease", code, errOut, out)
	}
	out, errOut, code = leasetop(ctx, reader, "ls", "--at", at.Format(time.RFC3339Nano), "--session", "marker")
	if code != 0 || !strings.HasSuffix(out, "\nno leases held\n") {
		t.Errorf("ls --at --session marker: code %d err %q out:\n%s\nwant no leases held", code, errOut, out)
	}

	// A relative time on the database clock: now, C's lease, expired.
	out, errOut, code = leasetop(ctx, reader, "ls", "--at", "0s ago")
	if code != 0 || !strings.Contains(out, "run-c") || !strings.Contains(out, "expired") {
		t.Errorf("ls --at '0s ago': code %d err %q out:\n%s\nwant run-c's expired lease", code, errOut, out)
	}

	// Pruned halfway between A's acquire and its rejected renewal (a second
	// apart: A's TTL): the history now starts at the rejected renewal.
	cut := h.Events[0].At.Add(500 * time.Millisecond)
	if _, err := db.Conn(t).Exec(ctx, `SELECT lease.prune_events(clock_timestamp() - $1::timestamptz)`, cut); err != nil {
		t.Fatal(err)
	}
	start := h.Events[1].At.UTC().Format(time.RFC3339Nano)
	old := h.Events[0].At.Format(time.RFC3339Nano)
	for _, args := range [][]string{{"ls", "--at", old}, {"ls", "--at", old, "--json"}} {
		out, errOut, code = leasetop(ctx, reader, args...)
		if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "older than the history kept, which starts at "+start) {
			t.Errorf("%v after prune: code %d out %q err %q, want exit 2, one line saying the history starts at %s", args, code, out, errOut, start)
		}
	}
	// After the start, the history still tells: B at its takeover.
	out, errOut, code = leasetop(ctx, reader, "ls", "--at", h.Events[2].At.Format(time.RFC3339Nano))
	if code != 0 || !strings.Contains(out, "run-b") {
		t.Errorf("ls --at the takeover after prune: code %d err %q out:\n%s\nwant run-b", code, errOut, out)
	}
}

// TestLsFilters: ls --account and --session narrow the live list too.
func TestLsFilters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	conn := db.Conn(t)
	acquire(t, conn, "acme", "s1", "1 min", "dev")
	acquire(t, conn, "acme", "s2", "1 min", "dev")
	acquire(t, conn, "beta", "s1", "1 min", "dev")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--account", "beta"}, "[beta/s1]"},
		{[]string{"--session", "s1"}, "[acme/s1 beta/s1]"},
		{[]string{"--account", "acme", "--session", "s2,s3"}, "[acme/s2]"},
		{[]string{"--account", "nobody"}, "[]"},
	} {
		out, errOut, code := leasetop(ctx, db.URL, append([]string{"ls", "--json"}, tt.args...)...)
		var got struct {
			Leases []struct {
				AccountID string `json:"account_id"`
				SessionID string `json:"session_id"`
			} `json:"leases"`
		}
		if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil {
			t.Fatalf("ls %v: code %d err %q (%v)", tt.args, code, errOut, err)
		}
		keys := []string{}
		for _, l := range got.Leases {
			keys = append(keys, l.AccountID+"/"+l.SessionID)
		}
		if s := "[" + strings.Join(keys, " ") + "]"; s != tt.want {
			t.Errorf("ls %v = %s, want %s", tt.args, s, tt.want)
		}
	}
}
