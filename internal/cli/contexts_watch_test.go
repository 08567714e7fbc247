package cli_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/internal/testkit/proctest"
)

// rowOf matches a table row of context ctx and session sess.
func rowOf(ctx, sess string) *regexp.Regexp {
	return regexp.MustCompile(`(?m)^[ ▶] ` + regexp.QuoteMeta(ctx) + ` +acme +` + regexp.QuoteMeta(sess) + ` `)
}

// holds reports whether conn's database has a lease of acme/sess.
func holds(t *testing.T, conn *pgx.Conn, sess string) bool {
	t.Helper()
	var n int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM lease.session_lease WHERE account_id = 'acme' AND session_id = $1`, sess).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n == 1
}

// The monitor of two PostgreSQL servers in a real terminal (tmux, 140x30):
// one table with a CONTEXT column and a line of each context's link; the
// server of us stops, and us is shown down while eu keeps updating (a lease
// acquired meanwhile shows); it starts again and us comes back by itself
// (its lease acquired after shows). eu is protected: x asks for the session
// id to be typed, y does not release, the id does. us is read-only: x is
// refused, and nothing is released.
func TestWatchContextsInTmux(t *testing.T) {
	t.Parallel()
	eu := pgtest.New(t)
	usSrv, us := pgtest.OtherServer(t, "us_app")
	euConn, usConn := eu.Conn(t), us.Conn(t)
	acquire(t, euConn, "acme", "eu-1", "1 hour", "eu worker")
	acquire(t, usConn, "acme", "us-1", "1 hour", "us worker")
	cfg := configFile(t, fmt.Sprintf("[contexts.eu]\ndsn = %q\nmode = \"protected\"\ncolor = \"#5fafff\"\n\n"+
		"[contexts.us]\ndsn = %q\nmode = \"read-only\"\ncolor = \"208\"\n", eu.URL, us.URL))
	bin := builtBinary(t)
	env := []string{"HOME=" + t.TempDir(), "TERM=xterm-256color"}
	tm := proctest.StartTmux(t, 140, 30, env, fmt.Sprintf("'%s' watch --config '%s' --context all; echo \"leasetop exited $?\"; sleep 600", bin, cfg))

	s := tm.WaitFor("both contexts live with their leases", 60*time.Second, func(s string) bool {
		return strings.Contains(s, "eu ● LIVE") && strings.Contains(s, "us ● LIVE") && rowOf("eu", "eu-1").MatchString(s) && rowOf("us", "us-1").MatchString(s)
	})
	t.Logf("both live:\n%s", s)
	if !strings.Contains(s, "CONTEXT ACCOUNT") || !strings.Contains(s, "[PROTECTED]") || !strings.Contains(s, "[RO]") {
		t.Errorf("want a CONTEXT column and each context's mode in the header:\n%s", s)
	}

	usConn.Close(context.Background())
	usSrv.Stop()
	acquire(t, euConn, "acme", "eu-2", "1 hour", "eu worker")
	s = tm.WaitFor("us down, eu's new lease", 60*time.Second, func(s string) bool {
		return regexp.MustCompile(`us (↻|✖) `).MatchString(s) && strings.Contains(s, "eu ● LIVE") && rowOf("eu", "eu-2").MatchString(s)
	})
	t.Logf("us stopped:\n%s", s)
	if !rowOf("us", "us-1").MatchString(s) {
		t.Errorf("us's lease left the table while us was down (it should stay as last read):\n%s", s)
	}

	if err := usSrv.Restart(context.Background()); err != nil {
		t.Fatalf("restart us: %v", err)
	}
	usConn = us.Conn(t)
	acquire(t, usConn, "acme", "us-2", "1 hour", "us worker")
	s = tm.WaitFor("us back by itself, with its new lease", 60*time.Second, func(s string) bool {
		return strings.Contains(s, "us ● LIVE") && rowOf("us", "us-2").MatchString(s)
	})
	t.Logf("us back:\n%s", s)

	// us is read-only: x is refused there.
	tm.Keys("/")
	tm.Type("us-1")
	tm.Keys("Enter")
	tm.WaitFor("the filter on us-1", 10*time.Second, func(s string) bool {
		return rowOf("us", "us-1").MatchString(s) && !rowOf("eu", "eu-1").MatchString(s)
	})
	tm.Keys("x")
	tm.WaitFor("the refusal", 10*time.Second, func(s string) bool {
		return strings.Contains(s, "context us is read-only: forced release is refused there") && !strings.Contains(s, "Force release this lease?")
	})
	if !holds(t, usConn, "us-1") {
		t.Error("us's lease was released in a read-only context")
	}

	// eu is protected: y does not confirm, the session id does.
	// Escape apart from what follows: a terminal reads Escape and a key
	// sent together as that key with Alt.
	tm.Keys("Escape")
	tm.WaitFor("the filter cleared", 10*time.Second, func(s string) bool {
		return rowOf("eu", "eu-1").MatchString(s) && rowOf("us", "us-1").MatchString(s)
	})
	tm.Keys("/")
	tm.Type("eu-1")
	tm.Keys("Enter")
	tm.WaitFor("the filter on eu-1", 10*time.Second, func(s string) bool {
		return rowOf("eu", "eu-1").MatchString(s) && !rowOf("us", "us-1").MatchString(s)
	})
	tm.Keys("x")
	s = tm.WaitFor("the protected dialog", 10*time.Second, func(s string) bool {
		return strings.Contains(s, "protected context: type the session id to release it")
	})
	t.Logf("protected dialog:\n%s", s)
	tm.Keys("y", "Enter")
	tm.WaitFor("y refused", 10*time.Second, func(s string) bool {
		return strings.Contains(s, "type the session id exactly as shown to confirm")
	})
	if !holds(t, euConn, "eu-1") {
		t.Fatal("y released a lease of a protected context")
	}
	tm.Keys("BSpace")
	tm.Type("eu-1")
	tm.Keys("Enter")
	tm.WaitFor("the release", 20*time.Second, func(s string) bool {
		return strings.Contains(s, "force released eu:acme/eu-1")
	})
	if holds(t, euConn, "eu-1") {
		t.Error("typing the session id did not release eu's lease")
	}
}
