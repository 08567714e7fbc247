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
//     primary key) without any trigger;
//   - fence_seq: a copy of lease.fence_seq;
//   - acquire, renew: the lease functions, copied from the embedded
//     functions.sql with their table and sequence pointed at the copies, so the
//     only difference from lease.acquire/lease.renew is the NOTIFY trigger;
//   - on_session_lease_renewal: the renewal-notification trigger function,
//     copied from triggers.sql.
//
// Every copy notifies a private channel instead of lease_events, so no
// monitor ever hears of the copies.
//
// The copies are made from the same embedded text that migrate applies, so they
// cannot drift from the real functions.

// copiedFunctions are the functions copied from functions.sql.
var copiedFunctions = []string{"acquire", "renew"}

// tableRefs matches the objects the copies point elsewhere. \b keeps
// lease.event_json and lease.grant untouched.
var tableRefs = regexp.MustCompile(`\blease\.(session_lease|fence_seq|acquire|renew|on_session_lease_renewal)\b`)

// scratchDDL returns the statements that create the scratch schema.
func scratchDDL(schema, channel string) ([]string, error) {
	s := pgx.Identifier{schema}.Sanitize()
	stmts := []string{
		"CREATE SCHEMA " + s,
		"CREATE TABLE " + s + ".plain_lease (LIKE lease.session_lease INCLUDING ALL)",
		"CREATE SEQUENCE " + s + ".fence_seq AS bigint",
	}
	files := map[string]string{}
	for _, f := range leasesql.Files() {
		files[f.Name] = f.SQL
	}
	for _, name := range copiedFunctions {
		fn, err := extractFunction(files["functions.sql"], name)
		if err != nil {
			return nil, err
		}
		stmts = append(stmts, retarget(fn, s, channel))
	}
	fn, err := extractFunction(files["triggers.sql"], "on_session_lease_renewal")
	if err != nil {
		return nil, err
	}
	if !strings.Contains(fn, "'lease_events'") {
		return nil, fmt.Errorf("bench: lease.on_session_lease_renewal no longer notifies 'lease_events': update sqlcopy.go")
	}
	stmts = append(stmts, retarget(fn, s, channel))
	return stmts, nil
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

// retarget points a copied function at the scratch schema's objects (the
// table copy is plain_lease) and its notifications at channel.
func retarget(fn, schema, channel string) string {
	fn = strings.ReplaceAll(fn, "'lease_events'", quoteLiteral(channel))
	return tableRefs.ReplaceAllStringFunc(fn, func(m string) string {
		obj := strings.TrimPrefix(m, "lease.")
		if obj == "session_lease" {
			obj = "plain_lease"
		}
		return schema + "." + obj
	})
}

// quoteLiteral quotes s as an SQL string literal. Only ever used with names
// bench generates itself (hex digits and underscores).
func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
