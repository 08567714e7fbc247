package cli_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/cli"
	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// enqueueAs takes a ticket in acct/sess's queue for a fresh run as the login
// at dsn, labelled holder, and returns the run's public id.
func enqueueAs(t *testing.T, dsn, acct, sess, holder string) uuid.UUID {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	r := uuid.New()
	if _, err := conn.Exec(ctx, `SELECT lease.enqueue($1, $2, $3, '1 hour', $4)`, acct, sess, r, holder); err != nil {
		t.Fatal(err)
	}
	return data.PublicRunID(r)
}

// TestQueueCommand: leasetop queue lists a session's
// tickets head first with each waiter's login, as any role that may read;
// --clear is lease_admin's: an app login is refused (exit 1, nothing
// cleared); an operator clears one ticket by the prefix of its run id, then
// the whole queue, each recorded as queue_left with its login and reason;
// clearing an empty queue exits 5. Bad input is one line, exit 2.
func TestQueueCommand(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	acquire(t, db.Conn(t), "acme", "chat", "1 hour", "desktop")
	phoneDSN, phoneLogin := pgtest.Login(t, db, "lease_app")
	tabletDSN, tabletLogin := pgtest.Login(t, db, "lease_app")
	adminDSN, admin := pgtest.Login(t, db, "lease_admin")
	phone := enqueueAs(t, phoneDSN, "acme", "chat", "phone")
	tablet := enqueueAs(t, tabletDSN, "acme", "chat", "tablet")
	session := []string{"--account", "acme", "--session", "chat"}

	out, errOut, code := leasetop(ctx, db.ReaderURL(t), append([]string{"queue"}, session...)...)
	p, tb := strings.Index(out, phone.String()), strings.Index(out, tablet.String())
	if code != cli.ExitOK || errOut != "" || p < 0 || tb < p || !strings.Contains(out, phoneLogin) || !strings.Contains(out, tabletLogin) {
		t.Fatalf("queue as a reader: code %d stderr %q stdout:\n%s\nwant phone's ticket (login %s) then tablet's (%s)", code, errOut, out, phoneLogin, tabletLogin)
	}
	out, _, code = leasetop(ctx, db.URL, append([]string{"queue", "--json"}, session...)...)
	var js struct {
		Tickets []struct {
			Position int    `json:"position"`
			RunID    string `json:"run_id"`
			Login    string `json:"login"`
		} `json:"tickets"`
	}
	if err := json.Unmarshal([]byte(out), &js); code != cli.ExitOK || err != nil || len(js.Tickets) != 2 ||
		js.Tickets[0].RunID != phone.String() || js.Tickets[0].Position != 1 || js.Tickets[1].Login != tabletLogin {
		t.Fatalf("queue --json: code %d, %v:\n%s", code, err, out)
	}

	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"clear without reason", []string{"--clear"}, "needs --reason"},
		{"run without clear", []string{"--run", phone.String()}, "go with --clear"},
		{"json with clear", []string{"--clear", "--json", "--reason", "r"}, "does not go with --clear"},
		{"short run", []string{"--clear", "--run", "abc", "--reason", "r"}, "too short"},
		{"control character", []string{"--clear", "--reason", "r\x1b[2J"}, "control"},
	} {
		out, errOut, code := leasetop(ctx, adminDSN, append(append([]string{"queue"}, session...), c.args...)...)
		if code != cli.ExitUsage || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, c.want) || strings.ContainsRune(errOut, 0x1b) {
			t.Errorf("%s: code %d stdout %q stderr %q, want 2 and one line with %q", c.name, code, out, errOut, c.want)
		}
	}

	_, errOut, code = leasetop(ctx, phoneDSN, append([]string{"queue"}, append(session, "--clear", "--reason", "mine")...)...)
	if code != cli.ExitFailure || !strings.Contains(errOut, "permission denied") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("queue --clear as lease_app: code %d stderr %q, want 1 and permission denied", code, errOut)
	}

	out, errOut, code = leasetop(ctx, adminDSN, append([]string{"queue"}, append(session, "--clear", "--run", phone.String()[:8], "--reason", "stuck phone, INC-4")...)...)
	if code != cli.ExitOK || !strings.Contains(out, "cleared the ticket of run "+phone.String()) {
		t.Fatalf("queue --clear --run as lease_admin: code %d stdout %q stderr %q", code, out, errOut)
	}
	out, errOut, code = leasetop(ctx, adminDSN, append([]string{"queue"}, append(session, "--clear", "--reason", "INC-4")...)...)
	if code != cli.ExitOK || !strings.Contains(out, "cleared 1 ticket from the queue of acme/chat") {
		t.Fatalf("queue --clear as lease_admin: code %d stdout %q stderr %q", code, out, errOut)
	}
	out, errOut, code = leasetop(ctx, adminDSN, append([]string{"queue"}, append(session, "--clear", "--reason", "INC-4")...)...)
	if code != cli.ExitNothing || !strings.Contains(errOut, "nothing to clear") || out != "" {
		t.Fatalf("queue --clear of an empty queue: code %d stdout %q stderr %q, want 5", code, out, errOut)
	}

	rows, err := db.Conn(t).Query(ctx, `SELECT run_id, actor, reason FROM lease.event WHERE kind = 'queue_left' ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	type left struct {
		Run           uuid.UUID
		Actor, Reason string
	}
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[left])
	want := []left{{phone, admin, "cleared: stuck phone, INC-4"}, {tablet, admin, "cleared: INC-4"}}
	if err != nil || len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("queue_left events = %+v, %v; want %+v", got, err, want)
	}
	out, _, code = leasetop(ctx, db.URL, append([]string{"queue"}, session...)...)
	if code != cli.ExitOK || !strings.Contains(out, "no queue: acme/chat has no live ticket") {
		t.Fatalf("queue after the clears: code %d stdout %q", code, out)
	}
}
