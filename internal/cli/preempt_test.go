package cli_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/cli"
	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestLsAndEventsShowPreempt: ls --json carries each lease's preemptible
// flag and attachment (null for none); events shows a preempted event with
// both labels and the reason, in text and in JSON.
func TestLsAndEventsShowPreempt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	conn := db.Conn(t)
	if _, err := conn.Exec(ctx, `SELECT * FROM lease.acquire_with('acme', 'pay', $1, '1 min', 'checkout', false, 'stream-7')`, uuid.New()); err != nil {
		t.Fatal(err)
	}
	victim := acquire(t, conn, "acme", "chat", "1 min", "desktop")
	taker := uuid.New()
	if _, err := conn.Exec(ctx, `SELECT * FROM lease.preempt('acme', 'chat', $1, '1 min', 'phone', 'moved to the phone')`, taker); err != nil {
		t.Fatal(err)
	}

	out, errOut, code := leasetop(ctx, db.URL, "ls", "--json")
	if code != 0 {
		t.Fatalf("ls --json: code %d err %q", code, errOut)
	}
	var got struct {
		Leases []struct {
			SessionID   string  `json:"session_id"`
			Preemptible *bool   `json:"preemptible"`
			Attachment  *string `json:"attachment"`
		} `json:"leases"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("ls --json is not JSON: %v\n%s", err, out)
	}
	want := map[string]struct {
		preemptible bool
		attachment  string
	}{"chat": {true, ""}, "pay": {false, "stream-7"}}
	for _, l := range got.Leases {
		w := want[l.SessionID]
		if l.Preemptible == nil || *l.Preemptible != w.preemptible || (l.Attachment == nil) != (w.attachment == "") ||
			(l.Attachment != nil && *l.Attachment != w.attachment) {
			t.Errorf("ls --json lease %s: preemptible %v attachment %v, want %v %q", l.SessionID, l.Preemptible, l.Attachment, w.preemptible, w.attachment)
		}
	}

	out, _, code = leasetop(ctx, db.URL, "events")
	if code != 0 || !strings.Contains(out, "preempted      acme/chat run="+data.PublicRunID(taker).String()+" prev_run="+victim.String()) ||
		!strings.Contains(out, `holder=phone prev_holder=desktop`) || !strings.Contains(out, `reason="moved to the phone"`) {
		t.Errorf("events text = %q, want the preempted line with both runs, both labels and the reason", out)
	}
	out, _, code = leasetop(ctx, db.URL, "events", "--json")
	var last map[string]any
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || code != 0 {
		t.Fatalf("events --json last line %q: %v", lines[len(lines)-1], err)
	}
	if last["kind"] != "preempted" || last["prev_holder"] != "desktop" || last["reason"] != "moved to the phone" ||
		last["prev_run_id"] != victim.String() {
		t.Errorf("events --json preempted = %v, want kind, prev_holder, reason and prev_run_id", last)
	}
}

// TestHostileAttachmentIsInert: an attachment the schema would refuse (a
// superuser wrote it past the domain's check) reaches ls --json escaped.
func TestHostileAttachmentIsInert(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	conn := db.Conn(t)
	if _, err := conn.Exec(ctx, `ALTER DOMAIN lease.attachment_text DROP CONSTRAINT attachment_text_check`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO lease.session_lease (account_id, session_id, run_id, holder, fence,
		acquired_at, renewed_at, expires_at, attachment)
		VALUES ('acme', 's', gen_random_uuid(), 'h', 1, now(), now(), now() + interval '1 min', $1)`, "x\x1b]0;pwned\x07\u202eabc\u009b"); err != nil {
		t.Fatal(err)
	}
	out, _, code := leasetop(ctx, db.URL, "ls", "--json")
	if code != 0 || strings.ContainsAny(out, "\x1b\x07\u009b\u202e") || !strings.Contains(out, `\u001b]0;pwned`) {
		t.Errorf("ls --json with a hostile attachment is not inert (code %d):\n%q", code, out)
	}
}

// TestRunBusyFlags: bad --on-busy combinations and attachments are one
// line, exit 2, and nothing is acquired.
func TestRunBusyFlags(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	for _, tt := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--on-busy", "bogus"}, "--on-busy must be refuse, wait, queue, preempt, ask or steer"},
		{[]string{"--wait", "--on-busy", "preempt"}, "--wait is --on-busy wait"},
		{[]string{"--reason", "x"}, "--reason is for --on-busy preempt"},
		{[]string{"--on-busy", "preempt", "--reason", "a\u202eb"}, "--reason"},
		{[]string{"--attachment", "a\x1b[2Jb"}, "--attachment: attachment must not contain control characters"},
		{[]string{"--attachment", "a\u200bb"}, "--attachment: attachment must not contain U+200B"},
		{[]string{"--attachment", strings.Repeat("x", 1025)}, "at most 1024 bytes"},
	} {
		args := append(append([]string{"run", "--account", "acme", "--session", "s"}, tt.flags...), "--", "sh", "-c", "echo ran")
		out, errOut, code := leasetop(ctx, db.URL, args...)
		if code != cli.ExitUsage || !strings.Contains(errOut, tt.want) || strings.Count(errOut, "\n") != 1 || out != "" ||
			strings.ContainsAny(errOut, "\x1b\u202e\u200b") {
			t.Errorf("run %q: code %d stdout %q stderr %q; want exit 2 and one inert line with %q", tt.flags, code, out, errOut, tt.want)
		}
	}
	var n int
	if err := db.Conn(t).QueryRow(ctx, `SELECT count(*) FROM lease.event`).Scan(&n); err != nil || n != 0 {
		t.Errorf("the refused runs wrote %d events (%v), want none", n, err)
	}
}

// TestPreemptOnStandby: on a hot standby the read-only tools show a
// lease's attachment and preemptibility, and a preempt is refused with the
// usual one line (exit 1, the primary untouched).
func TestPreemptOnStandby(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	standby := pgtest.Standby(t)
	conn := db.Conn(t)
	if _, err := conn.Exec(ctx, `SELECT * FROM lease.acquire_with('acme', 'chat', $1, '1 hour', 'desktop', true, 'stream-7')`, uuid.New()); err != nil {
		t.Fatal(err)
	}
	pgtest.WaitReplayed(t, standby)
	on := db.On(t, standby)
	out, errOut, code := leasetop(ctx, on, "ls", "--json")
	if code != 0 || !strings.Contains(out, `"attachment": "stream-7"`) || !strings.Contains(out, `"preemptible": true`) {
		t.Errorf("ls --json on the standby: exit %d, stdout %q, stderr %q; want the attachment and preemptible", code, out, errOut)
	}
	out, errOut, code = leasetop(ctx, on, "run", "--account", "acme", "--session", "chat", "--on-busy", "preempt", "--", "sh", "-c", "echo ran")
	if code != cli.ExitFailure || !strings.Contains(errOut, "the server is read-only (a hot standby?): writes need the primary") ||
		strings.Count(errOut, "\n") != 2 || out != "" {
		t.Errorf("run --on-busy preempt on the standby: exit %d, stdout %q, stderr %q; want 1, the preempting line and the read-only line", code, out, errOut)
	}
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM lease.event WHERE kind = 'preempted'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("preempted events on the primary = %d (%v), want 0", n, err)
	}
}
