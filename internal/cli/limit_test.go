package cli_test

import (
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/cli"
	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/internal/testkit/proctest"
)

// TestLimitCommand: limit set and rm are lease_admin's (an app
// login is refused, exit 1, nothing set); ls and limit ls show the slots
// used and who holds them; run in a full account exits 3 naming the holder,
// and in a pool it declares (--pool) counts against the pool's limit; rm
// of a missing limit exits 5; bad input is one line, exit 2.
func TestLimitCommand(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	appDSN, _ := pgtest.Login(t, db, "lease_app")
	adminDSN, admin := pgtest.Login(t, db, "lease_admin")

	if _, errOut, code := leasetop(ctx, appDSN, "limit", "set", "acme", "1"); code != cli.ExitFailure || !strings.Contains(errOut, "permission denied") {
		t.Fatalf("limit set as lease_app: code %d stderr %q, want 1 and permission denied", code, errOut)
	}
	if out, errOut, code := leasetop(ctx, adminDSN, "limit", "set", "acme", "1"); code != cli.ExitOK || !strings.Contains(out, "set to 1 live run") {
		t.Fatalf("limit set as lease_admin: code %d stdout %q stderr %q", code, out, errOut)
	}
	if _, _, code := leasetop(ctx, adminDSN, "limit", "set", "acme", "--pool", "deep", "1"); code != cli.ExitOK {
		t.Fatalf("limit set --pool: code %d", code)
	}
	acquire(t, db.Conn(t), "acme", "chat-1", "1 hour", "desktop")

	out, errOut, code := leasetop(ctx, db.ReaderURL(t), "ls")
	if code != cli.ExitOK || !strings.Contains(out, "limit of account acme: 1/1 used, 0 queued: chat-1 (desktop,") {
		t.Fatalf("ls: code %d stderr %q stdout:\n%s\nwant the account's slots and their holder", code, errOut, out)
	}
	out, _, code = leasetop(ctx, db.ReaderURL(t), "limit", "ls", "--json")
	var js struct {
		Limits []struct {
			AccountID string `json:"account_id"`
			Pool      string `json:"pool"`
			Slots     int    `json:"slots"`
			Used      int    `json:"used"`
			SetBy     string `json:"set_by"`
		} `json:"limits"`
	}
	if err := json.Unmarshal([]byte(out), &js); code != cli.ExitOK || err != nil || len(js.Limits) != 2 ||
		js.Limits[0].Used != 1 || js.Limits[0].SetBy != admin || js.Limits[1].Pool != "deep" || js.Limits[1].Used != 0 {
		t.Fatalf("limit ls --json: code %d err %v\n%s", code, err, out)
	}

	_, errOut, code = leasetop(ctx, db.URL, "run", "--account", "acme", "--session", "chat-2", "--", "true")
	if code != cli.ExitBusy || !strings.Contains(errOut, "account acme is at its limit of 1 live runs: session chat-1") {
		t.Fatalf("run in a full account: code %d stderr %q, want 3 naming chat-1", code, errOut)
	}
	if _, _, code := leasetop(ctx, adminDSN, "limit", "rm", "acme"); code != cli.ExitOK {
		t.Fatalf("limit rm: code %d", code)
	}
	// A granted run starts its command under a guardian process: the binary.
	cmd := exec.CommandContext(ctx, builtBinary(t), "run", "--dsn", db.URL, "--account", "acme", "--session", "chat-2",
		"--pool", "deep", "--priority", "7", "--", "sh", "-c", `echo "$LEASETOP_FENCE"`)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("run in the pool's free slot: %v\n%s", err, b)
	}
	var pool string
	if err := db.Conn(t).QueryRow(ctx, `SELECT reason FROM lease.event
		 WHERE session_id = 'chat-2' AND kind = 'acquired'`).Scan(&pool); err != nil || pool != "deep slot 1" {
		t.Fatalf("run --pool deep's grant: reason %q, %v; want it to name deep's slot 1", pool, err)
	}
	if _, errOut, code := leasetop(ctx, adminDSN, "limit", "rm", "acme"); code != cli.ExitNothing || !strings.Contains(errOut, "has no limit") {
		t.Fatalf("limit rm of a missing limit: code %d stderr %q, want 5", code, errOut)
	}
	for _, bad := range [][]string{
		{"limit"}, {"limit", "set", "acme"}, {"limit", "set", "acme", "-1"}, {"limit", "set", "acme", "--pool", "a\x1bb", "1"},
		{"run", "--account", "acme", "--session", "s", "--priority", "40000", "--", "true"},
	} {
		_, errOut, code := leasetop(ctx, adminDSN, bad...)
		if code != cli.ExitUsage || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%q: code %d stderr %q, want 2 and one line", bad, code, errOut)
		}
	}
}

// TestLimitSlotOfAKilledHolder: a leasetop run process holding an account's
// only slot is killed with SIGKILL (no release); the slot stays taken while
// its lease is unexpired, and frees at its expiry on the database clock:
// the next grant in the account starts no earlier than that expiry.
func TestLimitSlotOfAKilledHolder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	store := db.Store(t)
	if _, err := store.SetLimit(ctx, "acme", "", 1); err != nil {
		t.Fatal(err)
	}
	p := proctest.Start(t, exec.Command(builtBinary(t), "run", "--dsn", db.URL, "--account", "acme", "--session", "chat-1",
		"--ttl", "3s", "--", "sleep", "600"))
	conn := db.Conn(t)
	pgtest.Eventually(t, 20*time.Second, "run to hold chat-1", func() bool {
		var n int
		return conn.QueryRow(ctx, `SELECT count(*) FROM lease.session_lease WHERE session_id = 'chat-1' AND expires_at > clock_timestamp()`).Scan(&n) == nil && n == 1
	})
	p.Signal(t, syscall.SIGKILL)
	p.Wait(t, 20*time.Second)
	var expires time.Time
	if err := conn.QueryRow(ctx, `SELECT expires_at FROM lease.session_lease WHERE session_id = 'chat-1'`).Scan(&expires); err != nil {
		t.Fatal(err)
	}
	k2 := data.Key{Account: "acme", Session: "chat-2"}
	run := uuid.New()
	var refusedLive bool
	pgtest.Eventually(t, 30*time.Second, "the killed run's slot to free", func() bool {
		_, err := store.Acquire(ctx, k2, run, time.Minute, "next")
		if errors.Is(err, data.ErrAtLimit) {
			var live bool
			if conn.QueryRow(ctx, `SELECT $1::timestamptz > clock_timestamp()`, expires).Scan(&live) == nil && live {
				refusedLive = true
			}
			return false
		}
		if err != nil {
			t.Fatalf("acquire chat-2: %v", err)
		}
		return true
	})
	var at time.Time
	if err := conn.QueryRow(ctx, `SELECT at FROM lease.event WHERE session_id = 'chat-2' AND kind = 'acquired'`).Scan(&at); err != nil {
		t.Fatal(err)
	}
	if at.Before(expires) {
		t.Fatalf("chat-2 granted at %v, before the killed run's lease expired at %v", at, expires)
	}
	if !refusedLive {
		t.Fatalf("never refused while the killed run's lease was live: the test saw nothing of the slot")
	}
}

// TestLsAccounts: ls --accounts, as a lease_reader, lists every limit
// fullest first with its slots used, the account's queued tickets, its
// saturation and the sessions holding its slots; --account keeps one
// account, --json says the same; with --at or --session it is bad input
// (exit 2, one line).
func TestLsAccounts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	conn := db.Conn(t)
	for _, q := range []string{
		`SELECT lease.set_limit('acme', '', 2)`, `SELECT lease.set_limit('globex', '', 4)`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	acquire(t, conn, "globex", "g-1", "1 hour", "browser")
	acquire(t, conn, "acme", "chat-1", "1 hour", "desktop")
	acquire(t, conn, "acme", "chat-2", "1 hour", "phone")
	if _, err := conn.Exec(ctx, `SELECT lease.enqueue('acme', 'chat-1', $1, '1 hour', 'laptop')`, uuid.New()); err != nil {
		t.Fatal(err)
	}
	reader := db.ReaderURL(t)
	out, errOut, code := leasetop(ctx, reader, "ls", "--accounts")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != cli.ExitOK || len(lines) != 3 {
		t.Fatalf("ls --accounts: code %d stderr %q stdout:\n%s\nwant a header and two limits", code, errOut, out)
	}
	for i, want := range [][]string{
		{"ACCOUNT", "POOL", "SLOTS", "QUEUED", "SATURATION", "HELD BY"},
		{"acme", "-", "2/2 used", "1", "100%", "chat-1 (desktop,", "chat-2 (phone,"},
		{"globex", "-", "1/4 used", "0", "25%", "g-1 (browser,"},
	} {
		for _, w := range want {
			if !strings.Contains(lines[i], w) {
				t.Errorf("ls --accounts line %d = %q, want %q in it (fullest first)", i, lines[i], w)
			}
		}
	}
	out, _, code = leasetop(ctx, reader, "ls", "--accounts", "--account", "globex", "--json")
	var js struct {
		Limits []struct {
			AccountID  string  `json:"account_id"`
			Used       int     `json:"used"`
			Saturation float64 `json:"saturation"`
			Holders    []struct {
				SessionID string `json:"session_id"`
			} `json:"holders"`
		} `json:"limits"`
	}
	if err := json.Unmarshal([]byte(out), &js); code != cli.ExitOK || err != nil || len(js.Limits) != 1 ||
		js.Limits[0].AccountID != "globex" || js.Limits[0].Saturation != 0.25 || len(js.Limits[0].Holders) != 1 ||
		js.Limits[0].Holders[0].SessionID != "g-1" {
		t.Fatalf("ls --accounts --account globex --json: code %d err %v\n%s", code, err, out)
	}
	for _, bad := range [][]string{
		{"ls", "--accounts", "--at", "1m ago"}, {"ls", "--accounts", "--session", "s"},
	} {
		_, errOut, code := leasetop(ctx, reader, bad...)
		if code != cli.ExitUsage || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%q: code %d stderr %q, want 2 and one line", bad, code, errOut)
		}
	}
}

// TestEventsPrintLimits: events prints an operator's limit_set and
// limit_removed on the account alone, with the pool and slots and who,
// a grant's slots, and a run's limit_refused with the limit it met.
func TestEventsPrintLimits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	conn := db.Conn(t)
	for _, q := range []string{
		`SELECT lease.set_limit('acme', 'deep', 1)`, `SELECT lease.set_limit('acme', '', 1)`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	var me string
	if err := conn.QueryRow(ctx, `SELECT session_user`).Scan(&me); err != nil {
		t.Fatal(err)
	}
	acquire(t, conn, "acme", "chat-1", "1 hour", "desktop")
	if _, err := conn.Exec(ctx, `SELECT lease.acquire('acme', 'chat-2', $1, '1 hour', 'phone')`, uuid.New()); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `SELECT lease.remove_limit('acme', 'deep')`); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := leasetop(ctx, db.ReaderURL(t), "events", "--kind", "limit_set,limit_removed,limit_refused,acquired")
	if code != cli.ExitOK {
		t.Fatalf("events: code %d stderr %q", code, errOut)
	}
	for _, want := range []string{
		` limit_set      acme actor=` + me + ` reason="pool deep: 1 slot"`,
		` limit_set      acme actor=` + me + ` reason="1 slot"`,
		` acquired       acme/chat-1 run=`,
		`holder=desktop actor=` + me + ` reason="slot 1"`,
		` limit_refused  acme/chat-2 run=`,
		`holder=phone actor=` + me + ` reason="account at its limit"`,
		` limit_removed  acme actor=` + me + ` reason="pool deep: no limit"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("events lacks %q:\n%s", want, out)
		}
	}
}

// TestRunPreemptsForASlotByPriority: in an account at its limit of one run,
// leasetop run --on-busy preempt as a lease_app login in lease_preempt takes the slot of
// the account's run only with a higher --priority: at the same priority it
// exits 3 naming the holder and changes nothing; at a higher one the
// holder's lease ends (force_released, naming the preempt and both
// priorities) and the command runs.
func TestRunPreemptsForASlotByPriority(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	if _, err := db.Store(t).SetLimit(ctx, "acme", "", 1); err != nil {
		t.Fatal(err)
	}
	acquire(t, db.Conn(t), "acme", "chat-1", "1 hour", "desktop")
	preemptDSN, role := pgtest.Login(t, db, "lease_app")
	if _, err := db.Conn(t).Exec(ctx, "GRANT lease_preempt TO "+pgx.Identifier{role}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := leasetop(ctx, preemptDSN, "run", "--account", "acme", "--session", "chat-2",
		"--on-busy", "preempt", "--priority", "0", "--", "true")
	if code != cli.ExitBusy || !strings.Contains(errOut, "account acme is at its limit of 1 live runs: session chat-1") {
		t.Fatalf("run --on-busy preempt at the holder's priority: code %d stderr %q, want 3 naming chat-1", code, errOut)
	}
	cmd := exec.CommandContext(ctx, builtBinary(t), "run", "--dsn", preemptDSN, "--account", "acme", "--session", "chat-2",
		"--on-busy", "preempt", "--priority", "5", "--reason", "vip", "--grace", "100ms", "--", "true")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("run --on-busy preempt --priority 5: %v\n%s", err, b)
	}
	var reason string
	if err := db.Conn(t).QueryRow(ctx, `SELECT reason FROM lease.event
		 WHERE session_id = 'chat-1' AND kind = 'force_released'`).Scan(&reason); err != nil ||
		!strings.Contains(reason, "preempted for a slot by run") || !strings.HasSuffix(reason, "priority 5 over 0: vip") {
		t.Fatalf("the holder's end: reason %q, %v; want a preempt for a slot at priority 5 over 0", reason, err)
	}
}

// TestRunQueuesForASlot: leasetop run --on-busy queue in an account at its
// limit takes a ticket in the account's queue (not an exit 3) and runs its
// command once the account's run releases its slot.
func TestRunQueuesForASlot(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	db := pgtest.New(t)
	s := db.Store(t)
	if _, err := s.SetLimit(ctx, "acme", "", 1); err != nil {
		t.Fatal(err)
	}
	held, holder := data.Key{Account: "acme", Session: "chat-1"}, uuid.New()
	if _, err := s.Acquire(ctx, held, holder, time.Hour, "desktop"); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, builtBinary(t), "run", "--dsn", db.URL, "--account", "acme", "--session", "chat-2",
		"--on-busy", "queue", "--", "true")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	pgtest.Eventually(t, 30*time.Second, "run's ticket in the account's queue", func() bool {
		select {
		case err := <-exited:
			t.Fatalf("run exited before the slot freed: %v\n%s", err, out.String())
		default:
		}
		var n int
		err := db.Conn(t).QueryRow(ctx, `SELECT count(*) FROM lease.queue_ticket WHERE account_id = 'acme' AND for_slot`).Scan(&n)
		return err == nil && n == 1
	})
	if ok, err := s.Release(ctx, held, holder); err != nil || !ok {
		t.Fatalf("release the account's run: %v, %v", ok, err)
	}
	if err := <-exited; err != nil {
		t.Fatalf("run --on-busy queue after the slot freed: %v\n%s", err, out.String())
	}
}
