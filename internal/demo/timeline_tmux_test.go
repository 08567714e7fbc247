package demo_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestTimelineScrubInTmux opens `leasetop watch --timeline` (the real
// binary, in tmux at 150x40) on a database with a known history: device-a
// acquires a session, its lease runs out, device-b takes it over. The lane
// shows device-b holding it now; N scrubs back to the takeover (the header
// says "as of" its instant, the events pane's cursor is on it, and the
// lane's held-by column, read from the history, says device-b), N again to
// device-a's acquisition (device-a held it then), and ← one step before it
// (the database's first event: nothing was pruned, so nobody held it
// before). esc goes back to live.
func TestTimelineScrubInTmux(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	conn := db.Conn(t)
	k := data.Key{Account: "acme", Session: "chat-tl"}
	acquire := func(ttl, holder string) {
		t.Helper()
		if _, err := conn.Exec(ctx, `SELECT lease.acquire($1, $2, $3, $4::interval, $5)`, k.Account, k.Session, uuid.New(), ttl, holder); err != nil {
			t.Fatal(err)
		}
	}
	acquire("300 ms", "device-a")
	pgtest.WaitExpired(t, conn, k)
	acquire("10 min", "device-b")
	var takeover, acquired time.Time
	if err := conn.QueryRow(ctx, `SELECT max(at) FILTER (WHERE kind = 'taken_over'), max(at) FILTER (WHERE kind = 'acquired') FROM lease.event`).Scan(&takeover, &acquired); err != nil {
		t.Fatal(err)
	}

	tm := startTmux(t, fmt.Sprintf("'%s' watch --dsn '%s' --timeline; echo \"leasetop exited $?\"; sleep 600", leasetopBin, db.URL))
	lane := regexp.MustCompile(`(?m)^acme/chat-tl .* (device-[ab]|nobody|before history)\b.*$`)
	heldBy := func(s string) string {
		m := lane.FindStringSubmatch(s)
		if m == nil {
			return ""
		}
		return m[1]
	}
	tm.waitFor("the lane held by device-b, live, with its history read (the takeover's »)", 60*time.Second, func(s string) bool {
		return strings.Contains(s, "timeline live") && heldBy(s) == "device-b" && regexp.MustCompile(`(?m)^acme/chat-tl .*»`).MatchString(s)
	})

	// The screen shows times in the local zone of the process: this one's.
	asOf := func(at time.Time) string { return "as of " + at.Local().Format("15:04:05.000") }
	tm.keys("N")
	s := tm.waitFor("the cursor on the takeover", 20*time.Second, func(s string) bool {
		return strings.Contains(s, asOf(takeover)) && heldBy(s) == "device-b"
	})
	if !regexp.MustCompile(`▶ \d\d:\d\d:\d\d\.\d{3} taken over +acme/chat-tl`).MatchString(s) {
		t.Errorf("the events pane's cursor is not on the takeover:\n%s", s)
	}
	tm.keys("N")
	tm.waitFor("the cursor on device-a's acquisition, held by device-a", 20*time.Second, func(s string) bool {
		return strings.Contains(s, asOf(acquired)) && heldBy(s) == "device-a"
	})
	tm.keys("Left")
	// The first event of a new database: before it nobody held the
	// session (nothing was pruned), not "before history".
	tm.waitFor("a step before it: nobody", 20*time.Second, func(s string) bool {
		return strings.Contains(s, "as of ") && !strings.Contains(s, asOf(acquired)) && heldBy(s) == "nobody"
	})
	tm.keys("Escape")
	tm.waitFor("live again", 20*time.Second, func(s string) bool {
		return strings.Contains(s, "timeline live") && heldBy(s) == "device-b"
	})
	tm.keys("q")
	s = tm.waitFor("the monitor's end", 30*time.Second, func(s string) bool { return strings.Contains(s, "leasetop exited") })
	if !strings.Contains(s, "leasetop exited 0") {
		t.Errorf("after q, want exit 0:\n%s", s)
	}
}
