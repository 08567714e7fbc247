package bench

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"

	leasesql "github.com/leasetop/leasetop/sql"
)

// The scratch schema holds what the baselines need, created by bench and
// dropped when it ends:
//
//   - plain_lease: a copy of lease.session_lease (same columns, constraints and
//     primary key) without any trigger, and fence_seq, a copy of
//     lease.fence_seq;
//   - seed_lease: the seed's table, for the seed's SQL (seedTable), and
//     v1_lease, leasetop v1's table, for its SQL (v1Table);
//   - acquire, renew: lease.acquire and lease.renew on plain_lease, so the only
//     difference from the real ones is the trigger;
//   - on_session_lease_renewal: the renewal-notification trigger function, for
//     renew-notify;
//   - event_lease and event: a second copy of the table and a copy of
//     lease.event, with the real ownership triggers whose function
//     (on_change_silent) writes the event row but does not NOTIFY, and
//     acquire_ev, lease.acquire on event_lease: it separates the event row's
//     cost from NOTIFY's.
//
// The internal helpers a copy calls that read or write lease.event or read
// lease.fence_seq (helpers) are copied with it, as <helper>_<copy>, on the
// scratch event table and fence_seq: no scratch function ever writes the
// real lease.event (a copy of lease.renew calling the real
// lease.record_zombie would), and the copies' fence-race check compares
// their fences with their own sequence.
//
// Every copy notifies a private channel instead of lease_events, so no
// monitor ever hears of the copies. The copies are made from the same
// embedded text that migrate applies, so they cannot drift from the real
// functions; a change that breaks the copying fails loudly.

// seedTable is the seed's lease table, the baselines' (baselines.go): four
// columns and its primary key, nothing else.
const seedTable = `(
	account_id text NOT NULL,
	session_id text NOT NULL,
	run_id uuid NOT NULL,
	expires_at timestamptz NOT NULL,
	PRIMARY KEY (account_id, session_id))`

// v1Table is leasetop v1's lease table (v1-cycle): its columns, its key,
// and its ids and label checked by the table's CHECKs, with refused, the
// character class lease.safe_text refuses today. It stays what it is when
// lease.session_lease changes (version 5 moved those checks to domains).
func v1Table(refused string) string {
	return `(
	account_id  text        NOT NULL,
	session_id  text        NOT NULL,
	run_id      uuid        NOT NULL,
	holder      text        NOT NULL DEFAULT '',
	fence       bigint      NOT NULL,
	acquired_at timestamptz NOT NULL,
	renewed_at  timestamptz NOT NULL,
	expires_at  timestamptz NOT NULL,
	PRIMARY KEY (account_id, session_id),
	CHECK (octet_length(account_id) BETWEEN 1 AND 512 AND account_id !~ '` + refused + `'),
	CHECK (octet_length(session_id) BETWEEN 1 AND 512 AND session_id !~ '` + refused + `'),
	CHECK (octet_length(holder) <= 256 AND holder !~ '` + refused + `'))`
}

// refusedClass finds the character class schema.sql's domains refuse, so
// that v1's CHECKs cannot drift from it.
var refusedClass = regexp.MustCompile(`refused constant text := '(\[[^']*\])'`)

// copySpec is one function copied into the scratch schema.
type copySpec struct {
	file   string // embedded file it comes from
	name   string // its name in schema lease
	as     string // its name in the scratch schema
	table  string // the scratch table it writes instead of lease.session_lease
	events string // the scratch event table it writes instead of lease.event ("": lease.event)
	silent bool   // drop its pg_notify
}

var copies = []copySpec{
	{file: "acquire.sql", name: "acquire", as: "acquire", table: "plain_lease"},
	{file: "renew.sql", name: "renew", as: "renew", table: "plain_lease"},
	{file: "triggers.sql", name: "on_session_lease_renewal", as: "on_session_lease_renewal", table: "plain_lease"},
	{file: "acquire.sql", name: "acquire", as: "acquire_ev", table: "event_lease"},
	{file: "triggers.sql", name: "on_session_lease_change", as: "on_change_silent", table: "event_lease", events: "event", silent: true},
}

// helpers are the internal functions that touch lease.event or
// lease.fence_seq, which a copy must not call in schema lease (see
// copyHelpers).
var helpers = []string{"record_zombie", "higher_fences", "fence_overtaken"}

var (
	sessionLeaseRef = regexp.MustCompile(`\blease\.session_lease\b`)
	fenceSeqRef     = regexp.MustCompile(`\blease\.fence_seq\b`)
	eventRef        = regexp.MustCompile(`\blease\.event\b`) // \b: not lease.event_json
	notifyLine      = regexp.MustCompile(`(?m)^\s*PERFORM pg_notify\(.*\);\n`)
	ownershipTrig   = regexp.MustCompile(`(?s)CREATE OR REPLACE TRIGGER session_lease_(acquired|taken_over|released)\b.*?;`)
)

// scratchDDL returns the statements that create the scratch schema.
func scratchDDL(schema, channel string) ([]string, error) {
	files := map[string]string{}
	var all strings.Builder // every file, where the helpers are found
	for _, f := range leasesql.Files() {
		files[f.Name] = f.SQL
		all.WriteString(f.SQL)
	}
	refused := refusedClass.FindStringSubmatch(files["schema.sql"])
	if refused == nil {
		return nil, fmt.Errorf("bench: no character class (refused constant text) in schema.sql: update sqlcopy.go")
	}
	s := pgx.Identifier{schema}.Sanitize()
	stmts := []string{
		"CREATE SCHEMA " + s,
		"CREATE TABLE " + s + ".plain_lease (LIKE lease.session_lease INCLUDING ALL)",
		"CREATE TABLE " + s + ".seed_lease " + seedTable,
		"CREATE TABLE " + s + ".v1_lease " + v1Table(refused[1]),
		"CREATE TABLE " + s + ".event_lease (LIKE lease.session_lease INCLUDING ALL)",
		"CREATE TABLE " + s + ".event (LIKE lease.event INCLUDING ALL)",
		"CREATE SEQUENCE " + s + ".fence_seq AS bigint",
	}
	for _, c := range copies {
		fn, err := copyFunction(files[c.file], c, s, channel)
		if err != nil {
			return nil, err
		}
		fn, hs, err := copyHelpers(all.String(), fn, c, s, channel)
		if err != nil {
			return nil, err
		}
		stmts = append(stmts, hs...)
		stmts = append(stmts, fn)
	}
	trigs := ownershipTrig.FindAllString(files["triggers.sql"], -1)
	if len(trigs) != 3 {
		return nil, fmt.Errorf("bench: found %d ownership triggers in triggers.sql, want 3: update sqlcopy.go", len(trigs))
	}
	for _, t := range trigs {
		t = sessionLeaseRef.ReplaceAllString(t, s+".event_lease")
		t = strings.ReplaceAll(t, "lease.on_session_lease_change()", s+".on_change_silent()")
		stmts = append(stmts, t)
	}
	return stmts, nil
}

// copyFunction returns c's CREATE FUNCTION statement for the scratch schema
// s: renamed, pointed at the copies and at channel.
func copyFunction(src string, c copySpec, s, channel string) (string, error) {
	fn, err := extractFunction(src, c.name)
	if err != nil {
		return "", err
	}
	fn = strings.Replace(fn, "FUNCTION lease."+c.name+"(", "FUNCTION "+s+"."+c.as+"(", 1)
	if c.as != c.name { // parameters are qualified by the function's name: acquire.run_id
		fn = regexp.MustCompile(`\b`+regexp.QuoteMeta(c.name)+`\.`).ReplaceAllString(fn, c.as+".")
	}
	fn = sessionLeaseRef.ReplaceAllString(fn, s+"."+c.table)
	fn = fenceSeqRef.ReplaceAllString(fn, s+".fence_seq")
	if c.events != "" {
		fn = eventRef.ReplaceAllString(fn, s+"."+c.events)
	}
	if c.silent {
		if n := len(notifyLine.FindAllString(fn, -1)); n != 1 {
			return "", fmt.Errorf("bench: lease.%s has %d pg_notify lines, want 1: update sqlcopy.go", c.name, n)
		}
		fn = notifyLine.ReplaceAllString(fn, "")
	}
	return strings.ReplaceAll(fn, "'lease_events'", quoteLiteral(channel)), nil
}

// copyHelpers points copy fn (of c) at its own copies of the helpers it
// calls, and returns it with their CREATE FUNCTION statements (to run
// first): each helper renamed <helper>_<c.as>, on c's table and the scratch
// event table.
func copyHelpers(src, fn string, c copySpec, s, channel string) (string, []string, error) {
	var stmts []string
	for _, h := range helpers {
		call := "lease." + h + "("
		if !strings.Contains(fn, call) {
			continue
		}
		hc := copySpec{name: h, as: h + "_" + c.as, table: c.table, events: "event"}
		stmt, err := copyFunction(src, hc, s, channel)
		if err != nil {
			return "", nil, err
		}
		stmts = append(stmts, stmt)
		fn = strings.ReplaceAll(fn, call, s+"."+hc.as+"(")
	}
	return fn, stmts, nil
}

// renewalTriggerDDL returns the statements that switch the renewal
// notification on and off on the scratch table, as lease.set_notify_renewals
// does on the real one.
func renewalTriggerDDL(schema string) (on, off string) {
	s := pgx.Identifier{schema}.Sanitize()
	on = "CREATE TRIGGER plain_lease_renewed AFTER UPDATE ON " + s + ".plain_lease FOR EACH ROW" +
		" WHEN (OLD.run_id = NEW.run_id AND OLD.fence = NEW.fence)" +
		" EXECUTE FUNCTION " + s + ".on_session_lease_renewal()"
	off = "DROP TRIGGER IF EXISTS plain_lease_renewed ON " + s + ".plain_lease"
	return on, off
}

// extractFunction returns the CREATE FUNCTION statement for lease.name from
// src: from its CREATE line to the closing "$fn$;".
func extractFunction(src, name string) (string, error) {
	head := "CREATE OR REPLACE FUNCTION lease." + name + "("
	start := strings.Index(src, head)
	if start < 0 {
		return "", fmt.Errorf("bench: function lease.%s not found in the embedded SQL: update sqlcopy.go", name)
	}
	end := strings.Index(src[start:], "\n$fn$;")
	if end < 0 {
		return "", fmt.Errorf("bench: function lease.%s has no closing $fn$;", name)
	}
	return src[start : start+end+len("\n$fn$;")], nil
}

// quoteLiteral quotes s as an SQL string literal. Only ever used with names
// bench generates itself (hex digits and underscores).
func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
