package data_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// invisibleIDs are ids and labels that look like "chat-1" or "phone pid
// 16663" on a terminal but are not: three rows of `leasetop ls` all read
// "globex chat-1 phone pid 16663".
var invisibleIDs = []string{
	"chat\u200b-1",     // zero-width space
	"chat-1\u200d",     // zero-width joiner
	"\ufeffchat-1",     // byte order mark
	"chat\u00ad-1",     // soft hyphen
	"chat-\u20601",     // word joiner
	"chat-1\u034f",     // combining grapheme joiner
	"chat\u180e-1",     // Mongolian vowel separator
	"chat-1\U000e0041", // tag character
}

// TestLookAlikeIDsAreRefused: a lease_app calling lease.acquire directly
// (not through the library, which validates first) cannot take a session,
// or label itself, with an id that differs from another only by a character
// that does not show; the library refuses the same before any round trip.
// A Cyrillic letter is a character that shows: it is taken, and the display
// marks it (termtext.Mark).
func TestLookAlikeIDsAreRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	app, login := connectAs(t, db, "lease_app")
	acquire := func(account, session, holder string) error {
		_, err := app.Exec(ctx, `SELECT * FROM lease.acquire($1, $2, $3, interval '1 minute', $4)`, account, session, uuid.New(), holder)
		return err
	}
	for _, id := range invisibleIDs {
		for _, call := range []struct {
			what                     string
			account, session, holder string
		}{
			{"account", strings.Replace(id, "chat", "globex", 1), "chat-1", "phone pid 16663"},
			{"session", "globex", id, "phone pid 16663"},
			{"holder", "globex", "chat-1", strings.Replace(id, "chat-1", "phone pid 16663", 1)},
		} {
			err := acquire(call.account, call.session, call.holder)
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) || pgErr.Code != "22023" {
				t.Errorf("as %s: lease.acquire with %+q in the %s: err = %v, want SQLSTATE 22023", login, id, call.what, err)
			}
			k := data.Key{Account: call.account, Session: call.session}
			if data.ValidateKey(k) == nil && data.ValidateHolder(call.holder) == nil {
				t.Errorf("data.Validate* accept %+q in the %s", id, call.what)
			}
		}
	}
	var n int
	if err := app.QueryRow(ctx, `SELECT count(*) FROM lease.session_lease`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("leases after the refused acquires = %d, %v; want 0", n, err)
	}
	if err := acquire("globex", "ch\u0430t-1", "phone pid 16663"); err != nil {
		t.Errorf("lease.acquire of ch\\u0430t-1 (Cyrillic a, a character that shows): %v, want granted", err)
	}
}

// oldTextClass is the character class the table's CHECKs refused before
// invisible characters were refused.
const oldTextClass = `[\u0001-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]`

// setOldChecks gives a migrated database's lease table what version 4 made
// (and, with oldTextClass, the release before it): text columns checked by
// the table's CHECKs, as CREATE TABLE made them (validated), and no domains.
func setOldChecks(t *testing.T, conn *pgx.Conn) {
	t.Helper()
	// The inbox's tables (version 6) use the domains too; a release with
	// the table's CHECKs had none.
	_, err := conn.Exec(context.Background(), `DROP TABLE lease.message, lease.inbox CASCADE; -- and the functions of its row type
		ALTER TABLE lease.session_lease
		ALTER COLUMN account_id TYPE text, ALTER COLUMN session_id TYPE text,
		ALTER COLUMN holder TYPE text, ALTER COLUMN attachment TYPE text,
		ADD CONSTRAINT session_lease_account_id_check CHECK (octet_length(account_id) BETWEEN 1 AND 512 AND account_id !~ '`+oldTextClass+`'),
		ADD CONSTRAINT session_lease_session_id_check CHECK (octet_length(session_id) BETWEEN 1 AND 512 AND session_id !~ '`+oldTextClass+`'),
		ADD CONSTRAINT session_lease_holder_check CHECK (octet_length(holder) <= 256 AND holder !~ '`+oldTextClass+`'),
		ADD CONSTRAINT session_lease_attachment_check CHECK (octet_length(attachment) <= 1024 AND attachment !~ '`+oldTextClass+`');
		DROP DOMAIN lease.id_text, lease.holder_text, lease.attachment_text`)
	if err != nil {
		t.Fatal(err)
	}
}

// textCheck is one of the domains' text constraints: whether it refuses
// the invisible characters (its class holds U+200B), whether it is
// validated, and its oid.
type textCheck struct {
	current, validated bool
	oid                uint32
}

// textChecks returns the constraints of the three text domains of
// lease.session_lease, by name, and fails the test unless there are three
// and the table has no CHECK of its own left.
func textChecks(t *testing.T, conn *pgx.Conn) map[string]textCheck {
	t.Helper()
	rows, err := conn.Query(context.Background(), `SELECT conname, strpos(pg_get_constraintdef(oid), '\u200b-\u200f') > 0, convalidated, oid
		FROM pg_constraint
		WHERE contypid IN ('lease.id_text'::regtype, 'lease.holder_text'::regtype, 'lease.attachment_text'::regtype)
		   OR (conrelid = 'lease.session_lease'::regclass AND contype = 'c')`)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]textCheck{}
	for rows.Next() {
		var name string
		var c textCheck
		if err := rows.Scan(&name, &c.current, &c.validated, &c.oid); err != nil {
			t.Fatal(err)
		}
		out[name] = c
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) != 3 || out["id_text_check"].oid == 0 || out["holder_text_check"].oid == 0 || out["attachment_text_check"].oid == 0 {
		t.Fatalf("lease.session_lease's text constraints are %v, want the three domains' only", out)
	}
	return out
}

// TestMigrateReplacesOldTextChecks: CREATE TABLE IF NOT EXISTS does not
// touch an existing table, so migrate gives the table of an earlier release
// (text columns, the table's CHECKs, here with the class before invisible
// characters were refused) the domains, with the current class. A live lease
// holding a character refused now must not make migrate fail: the
// constraint it breaks is then left NOT VALID (every later write is
// checked); the others, and all three on a table without such a lease, are
// validated. A second migrate leaves them alone.
func TestMigrateReplacesOldTextChecks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, withOldRow := range []bool{true, false} {
		db := pgtest.New(t)
		conn := db.Conn(t)
		setOldChecks(t, conn)
		if withOldRow {
			if _, err := conn.Exec(ctx, `INSERT INTO lease.session_lease VALUES
				('globex', 'chat-1', gen_random_uuid(), e'phone pid 16663\u200b', 1, now(), now(), now() + interval '1 minute')`); err != nil {
				t.Fatalf("a lease the old CHECKs took: %v", err)
			}
		}
		if err := data.Migrate(ctx, conn); err != nil {
			t.Fatalf("Migrate (old row %v): %v", withOldRow, err)
		}
		checks := textChecks(t, conn)
		for name, c := range checks {
			broken := withOldRow && name == "holder_text_check"
			if !c.current || c.validated == broken {
				t.Errorf("old row %v: after migrate %s refuses invisible characters %v, validated %v; want true, %v",
					withOldRow, name, c.current, c.validated, !broken)
			}
		}
		_, err := conn.Exec(ctx, `INSERT INTO lease.session_lease VALUES
			('globex', e'chat\u200b-1', gen_random_uuid(), 'phone', 1, now(), now(), now() + interval '1 minute')`)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "23514" {
			t.Errorf("old row %v: a new row with U+200B after migrate: err = %v, want a check violation", withOldRow, err)
		}
		if err := data.Migrate(ctx, conn); err != nil {
			t.Fatalf("Migrate again: %v", err)
		}
		if again := textChecks(t, conn); again["holder_text_check"].oid != checks["holder_text_check"].oid {
			t.Errorf("old row %v: a second migrate replaced the constraints again; want them left alone", withOldRow)
		}
	}
}

// TestMigrateFromVersion1WithInvisibleRows: a version-1 database with live
// leases whose ids and label hold characters refused now migrates (its
// UPDATE of every row runs under the CHECKs the rows were written under),
// and the table ends with the domains' current constraints, those the lease
// breaks NOT VALID.
func TestMigrateFromVersion1WithInvisibleRows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn := pgtest.NewEmpty(t).Conn(t)
	createV1(t, conn)
	if _, err := conn.Exec(ctx, `SELECT * FROM lease.acquire('globex', e'chat\u200b-1', $1, '1 hour', e'phone\u2060 pid 16663')`, uuid.New()); err != nil {
		t.Fatalf("version 1 acquire: %v", err)
	}
	if err := data.Migrate(ctx, conn); err != nil {
		t.Fatalf("Migrate from version 1 with a U+200B session: %v", err)
	}
	for name, c := range textChecks(t, conn) {
		broken := name != "attachment_text_check"
		if !c.current || c.validated == broken {
			t.Errorf("after migrate %s refuses invisible characters %v, validated %v; want true, %v", name, c.current, c.validated, !broken)
		}
	}
}
