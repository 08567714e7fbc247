// Package sql holds leasetop's SQL: the schema, the functions that are the
// only write path, the NOTIFY triggers and the roles, embedded so the binary
// can migrate a database by itself.
//
// The files are applied in the order of Files, in one transaction, by
// data.Migrate. Every statement is idempotent: applying them again leaves the
// database as it was, apart from recreating the functions and triggers.
//
// # One file per contract
//
// schema.sql holds the tables; runid.sql the public run id (run ids are
// capabilities); checks.sql the input checks; failover.sql the floor that
// keeps fences and event ids from repeating across a failover; fence.sql
// the fence race and the fence check; acquire.sql, renew.sql and
// release.sql the calls; history.sql the event rows' payload and
// retention; preempt.sql, queue.sql and handover.sql the busy strategies;
// partition.sql the history's partitions; notify.sql the notification
// after the commit and the SQL callers' side of it; triggers.sql the
// triggers that record every ownership change; roles.sql the grants.
//
// # Conventions
//
// Every function samples clock_timestamp() once and uses that instant for
// every comparison and timestamp it writes, so one call sees one "now" on
// the database clock. Functions are SECURITY DEFINER with a pinned
// search_path; callers need only EXECUTE (roles.sql). lock_timeout bounds how
// long a call can wait behind another transaction that holds the row.
//
// Every entry point also sets enable_seqscan off, so that its lookups by key
// use the key index whatever the statistics say. Sessions come and go: the
// tables keep a few live rows while their key index grew with every session
// they ever held, and PostgreSQL's estimate for one key through such an index
// (its pages over its few tuples) comes out above a scan of the whole heap,
// dead rows included. It then read the table on every call: 165 pages per
// acquire and per release in a long bench database, about a tenth of a
// cycle's server CPU (data/churned_plan_test.go). No lookup here wants a
// sequential scan.
//
// Every search_path ends in pg_temp. Unless it is listed, PostgreSQL searches
// the caller's temporary schema *first* for types and relations, so a caller
// could shadow text or timestamptz with a domain whose CHECK runs as the
// function's owner (data/attack_pgtemp_test.go).
package sql

import "embed"

// Version is the schema version these files create. Migrate records it in
// lease.schema_version; every other command refuses to run against a database
// whose recorded version differs.
//
// Version 2: every function's search_path lists pg_temp last, so a caller's
// temporary schema can no longer shadow the types the SECURITY DEFINER
// functions use; the table, the events and the notifications show public run
// ids (lease.public_run_id), so the run id a program calls with is a secret
// only it knows. Databases at version 1 must be migrated (Upgrade(1)). A
// promoted standby's first write moves the fence sequence and the event ids
// past its WAL timeline's floor (lease.follow_failover, named
// follow_timeline until version 6), so neither repeats
// across a failover; the functions carry it, the tables are unchanged.
//
// Version 3 (preempt): lease.preempt, granted to the new group lease_preempt,
// takes a lease from an unexpired holder (event kind preempted, with the
// victim's label in lease.event.prev_holder); lease rows say whether their
// holder may be preempted and carry its attachment (preempt.sql). Columns
// are added in place: a version-2 database migrates keeping its leases.
//
// Version 3 (queue): lease.queue_ticket and lease.session_queue, created if
// missing (a version-2 database migrates in place), the queue's functions
// (queue.sql), and the event kinds queue_joined and queue_left.
//
// Version 3 (ask to hand over): lease.handover_ask holds one ask per session,
// lease.ask_handover, hand_over, decline_handover and withdraw_handover
// write it (handover.sql), and the event kinds handover_asked, handed_over,
// handover_declined and handover_expired join the history. A version-2
// database migrates in place.
//
// Version 4 (partitioned history): lease.event is partitioned by UTC day of
// at, with a DEFAULT partition where a transition's row lands when its day's
// partition is missing; lease.maintain_events (partition.sql, granted to
// lease_admin) makes partitions ahead, moves rows out of the DEFAULT one and
// drops the days older than a retention. A version-2 or -3 history becomes
// the first partition in place (no copy), and ids go on from its identity.
//
// Version 5 (the cost of holding): lease.session_lease's ids, holder label
// and attachment are domains (lease.id_text, lease.holder_text,
// lease.attachment_text) instead of the table's CHECKs, which PostgreSQL
// prepared again for every write, renewals included. A version-4 table
// migrates in place: no rewrite, no read of its rows
// (lease.use_text_domains). The trigger keeps the event an opted-out call
// wrote for the caller's notification after its commit (lease.pending_key).
//
// Version 6 (the busy strategies' edges): an ask to hand over records what
// its asker declares (lease.handover_ask's preemptible and attachment, which
// lease.hand_over writes on the lease), is refused by a not-preemptible
// holder and behind the queue's live tickets (outcomes not_preemptible and
// queued, lease.handover_answer's ahead), and its handed_over event names
// the old holder (prev_holder); lease.preempted_run keeps a preempt's victim
// until it says its work stopped (lease.preempt_stopped, preempt_pending).
//
// Version 6 (the queue's owners): a ticket records the login that took it
// (lease.queue_ticket.login), one login may hold at most lease.queue_share
// (half) of a session's queue, lease.clear_queue (lease_admin) ends one
// ticket or a whole queue, audited as queue_left with reason "cleared: …",
// and an expired ticket leaves with its queue_left event at the next touch
// of its queue (lease.queue_purge) instead of at the next enqueue.
//
// Version 6 (migration hardening): lease.notify_event sends the committed
// row where the session kept no payload (a pooled server connection other
// than the call's), instead of failing. A zombie's renewal is recorded once per grant it
// meets on the key, and lease.renew_many records at most 100 a call.
// lease.maintain_events runs one at a time on lease.maintenance's row, which
// only the owner can lock, instead of an advisory lock anyone could hold.
// Migrate takes back every grant on the schema and its objects but the
// owner's (PUBLIC's default USAGE on the lease types too) and grants its own
// again (roles.sql), removes the default privileges in the schema
// (prelude.sql), and drops the lease.event_json that version 4's upgrade
// left on the old history's row type.
//
// Version 6 (SQL by contract): the failover floor's functions are
// lease.follow_failover, move_past_failover and failover_floor (their
// timeline names are dropped: "timeline" is the monitor's rewind view), and
// the functions live in one file per contract (see above).
//
// Version 7 (the inbox): lease.message holds the messages sent to a
// conversation (steer, cancel), delivered to whichever run holds it and
// carried to the next holder until acknowledged (inbox.sql:
// lease.send_message, receive_messages, ack_message, message_state,
// maintain_messages); the event kinds message_sent, message_delivered,
// message_carried, message_acked and message_expired join the history,
// whose rows name their message in the new column lease.event.message_id.
const Version = 7

//go:embed *.sql
var files embed.FS

// Files returns the migration's SQL files in the order they must run.
func Files() []File {
	return []File{
		read("prelude.sql", false),
		read("schema.sql", true),
		read("runid.sql", true),
		read("checks.sql", true),
		read("failover.sql", true),
		read("fence.sql", true),
		read("history.sql", true),
		read("acquire.sql", true),
		read("renew.sql", true),
		read("release.sql", true),
		read("preempt.sql", true),
		read("queue.sql", true),
		read("handover.sql", true),
		read("inbox.sql", true),
		read("partition.sql", true),
		read("notify.sql", true),
		read("triggers.sql", true),
		read("roles.sql", true),
		read("members.sql", false),
	}
}

// Upgrade returns the one-time steps for a database found at version from,
// to run after Files in the same transaction: they convert data that the
// idempotent files cannot (version 1's run ids). None for a new database or
// one already at Version.
func Upgrade(from int) []File {
	if from == 1 {
		return []File{read("upgrade_1.sql", true)}
	}
	return nil
}

func read(name string, asOwner bool) File {
	b, err := files.ReadFile(name)
	if err != nil {
		panic("sql: embedded file missing: " + name) // a build defect, not a runtime condition
	}
	return File{Name: name, SQL: string(b), AsOwner: asOwner}
}

// File is one embedded SQL file.
type File struct {
	Name string
	SQL  string
	// AsOwner says the file runs as the lease objects' owner (lease_owner),
	// not as the migrating role: it writes objects that lease_owner could
	// have changed, so whatever it fires must not run with more rights than
	// lease_owner's. The others (prelude.sql, members.sql) create roles and
	// hand out ownership, which only the migrating role may do, and touch no
	// object of the schema in a way that runs code.
	AsOwner bool
}
