package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/leasetop/leasetop/data"
	"github.com/leasetop/leasetop/internal/pgtest"
	leasesql "github.com/leasetop/leasetop/sql"
)

// TestREADMEQuotesTheSchemaLines: the README quotes the line each command
// prints for a database whose lease schema is missing, older or newer
// (TestSchemaErrorsGetOneLine checks that every command prints it, with
// exit 6); the quotes must be those lines, at this leasetop's version
// (the one for a newer schema names the binary's version, which varies).
func TestREADMEQuotesTheSchemaLines(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := strings.Join(strings.Fields(string(b)), " ")
	v := leasesql.Version
	for _, have := range []int{0, v - 1} {
		line := (&data.SchemaError{Have: have, Want: v}).Error()
		if !strings.Contains(readme, "`"+line+"`") {
			t.Errorf("README does not quote the line for a schema at version %d: `%s`", have, line)
		}
	}
	// A newer schema's line names this binary's version first (a build's).
	newer := fmt.Sprintf(" is older than the database: its lease schema is at version %d, this leasetop knows %d: upgrade leasetop (leasetop version --dsn URL compares them)`", v+1, v)
	if !strings.Contains(readme, "`this leasetop ") || !strings.Contains(readme, newer) {
		t.Errorf("README does not quote the line for a schema at version %d: `this leasetop VERSION%s", v+1, newer)
	}
}

// TestFunctionAttributes: the README (The SQL contract) says which lease
// functions are SECURITY DEFINER, which set lock_timeout (and enable_seqscan
// off: the functions programs call) and which pin their search_path; this is
// what the migrated schema has. A function added to
// sql/ fails here until the README says what it is.
func TestFunctionAttributes(t *testing.T) {
	type attrs struct{ definer, lockTimeout, pinned, noSeqScan bool }
	caller := attrs{definer: true, lockTimeout: true, pinned: true, noSeqScan: true} // the functions programs call
	owner := attrs{definer: true, pinned: true}                                      // triggers, prune_events
	invoker := attrs{pinned: true}                                                   // the rest
	want := map[string]attrs{
		"acquire": caller, "renew": caller, "renew_many": caller, "release": caller, "force_release": caller, "check_fence": caller,
		"acquire_with": caller, "set_attachment": caller, "preempt": caller, "check_holder_options": invoker,
		"preempt_stopped": caller, "preempt_pending": caller,
		"ask_handover": caller, "hand_over": caller, "decline_handover": caller, "withdraw_handover": caller,
		"handover_event": invoker, "handover_end": invoker, "handover_answer_of": invoker,
		"on_session_lease_change": owner, "on_session_lease_truncate": owner, "on_session_lease_renewal": owner,
		"prune_events":    owner,
		"notify_renewals": invoker, "set_notify_renewals": invoker,
		"check_key": invoker, "check_ttl": invoker, "check_label": invoker, "public_run_id": {}, "event_json": invoker,
		"safe_text": {}, "timeline_floor": {}, "follow_timeline": {}, "move_past_timeline": invoker,
		// one copy of the shared SQL, and the post-commit path for SQL callers (issue 29)
		"key_ok": {}, "ttl_ok": {}, "grant_ok": {}, "check_ttl_span": invoker, "check_run_id": invoker, "refuse_grant": invoker,
		"higher_fences": {}, "fence_overtaken": {}, "record_zombie": invoker, "quiet_event_id": invoker,
		"acquire_quiet": caller, "release_quiet": caller, "notify_event": owner,
		"pending_key": {}, "use_text_domains": invoker,
		// the queue (sql/queue.sql)
		"enqueue": caller, "renew_ticket": caller, "cancel_ticket": caller,
		"queue_event": owner, "queue_granted": owner, "queue_admits": invoker, "queue_place_of": invoker, "queue_limit": {},
		// the history's partitions (sql/partition.sql)
		"maintain_events": owner, "event_partitions": invoker, "make_event_partition": invoker, "drop_event_partitions": invoker,
	}
	db := pgtest.New(t)
	rows, err := db.Conn(t).Query(context.Background(), `
		SELECT p.proname, p.prosecdef,
		       coalesce('lock_timeout=5s' = ANY(p.proconfig), false),
		       coalesce(EXISTS (SELECT 1 FROM unnest(p.proconfig) c WHERE c LIKE 'search_path=%pg_temp'), false),
		       coalesce('enable_seqscan=off' = ANY(p.proconfig), false)
		  FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
		 WHERE n.nspname = 'lease'`)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]attrs{}
	for rows.Next() {
		var name string
		var a attrs
		if err := rows.Scan(&name, &a.definer, &a.lockTimeout, &a.pinned, &a.noSeqScan); err != nil {
			t.Fatal(err)
		}
		got[name] = a
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for name, g := range got {
		w, ok := want[name]
		switch {
		case !ok:
			t.Errorf("lease.%s (definer %v, lock_timeout %v, pinned search_path %v, enable_seqscan off %v) is not in this test: say in the README's SQL contract what it is", name, g.definer, g.lockTimeout, g.pinned, g.noSeqScan)
		case g != w:
			t.Errorf("lease.%s: definer %v, lock_timeout %v, pinned search_path %v, enable_seqscan off %v; the README says %+v", name, g.definer, g.lockTimeout, g.pinned, g.noSeqScan, w)
		case !strings.HasPrefix(name, "on_") && !strings.Contains(string(b), name):
			t.Errorf("the README does not name lease.%s", name)
		}
	}
	for name := range want {
		if _, ok := got[name]; !ok {
			t.Errorf("lease.%s is gone from the schema: take it out of the README and this test", name)
		}
	}
}
