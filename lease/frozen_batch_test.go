package lease_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/internal/testkit/proctest"
	"github.com/leasetop/leasetop/internal/testkit/syncbuf"
	"github.com/leasetop/leasetop/lease"
)

// childFrozenBatch holds frozenBatchSize leases through one Client and
// stops itself with a real SIGSTOP inside the first batch that renews all of
// them: after the batch's send time is taken, before its RenewMany call. The
// test continues it with SIGCONT once every lease has expired on the
// database clock.
const (
	childFrozenBatch = "frozen-batch"
	frozenBatchSize  = 4
	envChildMargin   = "LEASE_TEST_CHILD_MARGIN" // its SafetyMargin (a Go duration; 0: the default)
)

// frozenBatchChild is the childFrozenBatch mode. It prints
// "lease SESSION PUBLIC_RUN_ID FENCE" per lease and "ready", then
// "freezing" just before it stops; once continued, per lease in order
// "lost SESSION expired=B rejected=B takenover=B stale=B: CAUSE" (stale: a
// fence check in a transaction of its own fails with ErrStale), then, once
// the frozen batch's call has returned, "batch unsent=B: ERR" (unsent: it
// ended on its deadline, not sent), then "done", and waits until killed.
func frozenBatchChild(ctx context.Context, store *data.Store, ttl time.Duration) error {
	margin, err := time.ParseDuration(os.Getenv(envChildMargin))
	if err != nil {
		return err
	}
	client, err := lease.New(store, lease.Config{TTL: ttl, SafetyMargin: margin})
	if err != nil {
		return err
	}
	var (
		armed  atomic.Bool
		frozen atomic.Int64 // the frozen batch's send time (UnixNano)
	)
	answered := make(chan error, 1) // the frozen batch's call returned
	// The hook returns only once the process has been continued: kill(2)
	// returns before a stop takes effect on every thread, and on a loaded
	// machine this goroutine ran on past the clock check and stopped inside
	// the call's write, which it then finished after SIGCONT, renewing the
	// leases after their deadlines. Waiting for SIGCONT puts the whole
	// freeze between the batch's send time and its clock check, where this
	// test means it to be.
	continued := make(chan os.Signal, 1)
	signal.Notify(continued, syscall.SIGCONT)
	lease.SetBatchHook(client, func(n int, sent time.Time) {
		if n == frozenBatchSize && armed.CompareAndSwap(true, false) {
			frozen.Store(sent.UnixNano())
			fmt.Println("freezing")
			_ = syscall.Kill(os.Getpid(), syscall.SIGSTOP)
			<-continued
		}
	})
	lease.SetBatchAnsweredHook(client, func(_ int, sent time.Time, err error) {
		if sent.UnixNano() == frozen.Load() {
			answered <- err
		}
	})
	ls := make([]*lease.Lease, frozenBatchSize)
	for k := range ls {
		p, err := client.Authorize(ctx, allowAll, lease.Key{Account: "acct", Session: fmt.Sprintf("frozen%d", k)}, "child")
		if err != nil {
			return err
		}
		if ls[k], err = client.Try(ctx, p); err != nil {
			return err
		}
		fmt.Printf("lease %s %s %d\n", ls[k].Key().Session, ls[k].RunID(), ls[k].Fence())
	}
	armed.Store(true)
	fmt.Println("ready")
	for _, l := range ls {
		<-l.Done()
		cause := l.Err()
		tx, err := store.Pool().Begin(ctx)
		if err != nil {
			return err
		}
		stale := errors.Is(l.CheckFence(ctx, tx), lease.ErrStale)
		_ = tx.Rollback(ctx)
		fmt.Printf("lost %s expired=%v rejected=%v takenover=%v stale=%v: %v\n", l.Key().Session,
			errors.Is(cause, lease.ErrExpired), errors.Is(cause, lease.ErrRejected), errors.Is(cause, lease.ErrTakenOver), stale, cause)
	}
	// The frozen batch's call, once continued, ends before its answer is
	// printed: a renewal it sent has reached the database by then.
	err = <-answered
	fmt.Printf("batch unsent=%v: %v\n", errors.Is(err, context.DeadlineExceeded), err)
	fmt.Println("done")
	_, _ = io.Copy(io.Discard, os.Stdin) // until killed
	return nil
}

// frozenLease is one of the child's leases as it printed it.
type frozenLease struct {
	session string
	run     uuid.UUID // public
	fence   int64
}

// A process frozen (SIGSTOP) inside a batch of renewals, after the batch's
// send time was taken and before its call, until every lease's local
// deadline has passed, renews nothing once continued (SIGCONT): the batch
// is not sent. Two freezes:
//
//   - past the TTL on the database clock, while another run takes one of
//     its keys over: a batch sent then would be rejected, and lease.renew_many
//     records a renew_rejected event for every rejected renewal of a run that
//     held the key, so none may name the frozen runs; the taken-over key
//     keeps its new owner with a higher fence; each fence check of the child
//     fails with ErrStale;
//   - past the local deadlines (a SafetyMargin of about half the TTL) but
//     not, as a rule, the rows' expiry on the database: a batch sent then
//     would still renew them, so no row may expire later than it did while
//     the child was frozen.
//
// In both, the child loses every lease with ErrExpired alone (a renewal
// answered after the deadline would say ErrRejected or ErrTakenOver), and
// no row of the frozen runs moves its expiry.
func TestFrozenBatchRenewsNothingAfterItsDeadline(t *testing.T) {
	t.Run("past the TTL, one key taken over", func(t *testing.T) {
		frozenBatch(t, 3*time.Second, 0, true)
	})
	t.Run("past the local deadline only", func(t *testing.T) {
		frozenBatch(t, 6*time.Second, 2900*time.Millisecond, false)
	})
}

// frozenBatch runs one freeze of TestFrozenBatchRenewsNothingAfterItsDeadline:
// the child holds its leases with ttl and margin (0: the default); with
// pastTTL it stays frozen until every row expired on the database clock and
// another run takes the first key over, else until every local deadline
// passed (each is at most the row's expiry - margin).
func frozenBatch(t *testing.T, ttl, margin time.Duration, pastTTL bool) {
	ctx := context.Background()
	db := pgtest.New(t)
	conn := db.Conn(t)

	var out syncbuf.Buffer
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), envChild+"="+childFrozenBatch, envChildDSN+"="+db.URL, envChildTTL+"="+ttl.String(), envChildMargin+"="+margin.String())
	cmd.Stdout, cmd.Stderr = &out, &out
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	child := proctest.Start(t, cmd)
	has := func(line string) bool {
		if o := out.String(); strings.HasPrefix(o, "child:") || strings.Contains(o, "\nchild:") {
			t.Fatalf("child failed: %s", out.String())
		}
		return strings.Contains(out.String(), "\n"+line+"\n")
	}

	pgtest.Eventually(t, 60*time.Second, "the child to hold its leases", func() bool { return has("ready") })
	var held []frozenLease
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	for sc.Scan() {
		var l frozenLease
		var run string
		if _, err := fmt.Sscanf(sc.Text(), "lease %s %s %d", &l.session, &run, &l.fence); err != nil {
			continue
		}
		if l.run, err = uuid.Parse(run); err != nil {
			t.Fatal(err)
		}
		held = append(held, l)
	}
	if len(held) != frozenBatchSize {
		t.Fatalf("the child printed %d leases, want %d:\n%s", len(held), frozenBatchSize, out.String())
	}
	sessions := make([]string, len(held))
	runs := make([]uuid.UUID, len(held))
	for k, l := range held {
		sessions[k], runs[k] = l.session, l.run
	}

	pgtest.Eventually(t, 60*time.Second, "the child stopped inside a batch of all its leases", func() bool {
		p, ok := proctest.ReadProc(child.PID())
		return has("freezing") && ok && p.State == 'T'
	})
	// A lease's local deadline is its last batch's send time + ttl - margin,
	// and that batch's statement set the row's expiry later than that +
	// margin: a condition on the database clock tells when every deadline
	// has passed.
	what, shift := "every lease expired on the database clock", time.Duration(0)
	if !pastTTL {
		what, shift = "every local deadline passed", margin
	}
	pgtest.Eventually(t, 60*time.Second, what, func() bool {
		var live int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM lease.session_lease
			WHERE account_id = 'acct' AND session_id = ANY($1) AND expires_at - $2 * interval '1 microsecond' > clock_timestamp()`, sessions, shift.Microseconds()).Scan(&live); err != nil {
			t.Fatal(err)
		}
		return live == 0
	})
	if p, ok := proctest.ReadProc(child.PID()); !ok || p.State != 'T' {
		t.Fatalf("the child is no longer stopped (state %q) before SIGCONT", p.State)
	}

	// Another run takes the first key over while the child is frozen.
	var stolen *frozenLease
	thief := uuid.New()
	var thiefFence int64
	if pastTTL {
		stolen = &held[0]
		if err := conn.QueryRow(ctx, `SELECT fence FROM lease.acquire('acct', $1, $2, '1 hour', 'thief')`, stolen.session, thief).Scan(&thiefFence); err != nil {
			t.Fatalf("take over: %v", err)
		}
	}
	// Each row's expiry as it was when it expired (the stolen key's: the thief's).
	expired := make(map[string]time.Time)
	rows, err := conn.Query(ctx, `SELECT session_id, expires_at FROM lease.session_lease
		WHERE account_id = 'acct' AND session_id = ANY($1)`, sessions)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		var e time.Time
		if err := rows.Scan(&s, &e); err != nil {
			t.Fatal(err)
		}
		expired[s] = e
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}

	child.Signal(t, syscall.SIGCONT)
	pgtest.Eventually(t, 60*time.Second, "the child to report every loss", func() bool { return has("done") })
	t.Logf("child:\n%s", out.String())

	// The child: every lease lost on its local deadline, none by a renewal
	// the database rejected, and each fence check stale.
	stale := ""
	if pastTTL {
		stale = " stale=true" // a lease not expired on the database still passes its fence check
	}
	for _, l := range held {
		var line string
		for s := range strings.Lines(out.String()) {
			if strings.HasPrefix(s, "lost "+l.session+" ") {
				line = strings.TrimSpace(s)
			}
		}
		if !strings.Contains(line, " expired=true rejected=false takenover=false"+stale) {
			t.Errorf("%s: child reports %q, want lost with ErrExpired only (and%s)", l.session, line, stale)
		}
	}

	// The frozen batch's call, when continued, ended on its deadline, before
	// it was sent: the renewer's own check of the clock, or pgx's of the
	// context ("context already done") when the stop took effect a few
	// instructions after the hook sent SIGSTOP. Whether anything reached
	// the server is what the database checks below decide.
	if !strings.Contains(out.String(), "\nbatch unsent=true: renew 4 leases: ") {
		t.Errorf("the frozen batch's call did not end on its deadline:\n%s", out.String())
	}

	// The database: no row of the frozen runs moved, the stolen key is the thief's.
	var thiefPub uuid.UUID
	if err := conn.QueryRow(ctx, `SELECT lease.public_run_id($1)`, thief).Scan(&thiefPub); err != nil {
		t.Fatal(err)
	}
	for k := range held {
		l := &held[k]
		var run uuid.UUID
		var fence int64
		var exp time.Time
		err := conn.QueryRow(ctx, `SELECT run_id, fence, expires_at FROM lease.session_lease
			WHERE account_id = 'acct' AND session_id = $1`, l.session).Scan(&run, &fence, &exp)
		switch {
		case l == stolen:
			if err != nil {
				t.Fatalf("%s: the thief's row: %v", l.session, err)
			}
			if run != thiefPub || fence != thiefFence || fence <= l.fence {
				t.Errorf("%s: held by %s fence %d, want the thief %s with fence %d > %d", l.session, run, fence, thiefPub, thiefFence, l.fence)
			}
			if !exp.Equal(expired[l.session]) {
				t.Errorf("%s: the thief's expiry moved from %v to %v", l.session, expired[l.session], exp)
			}
		case errors.Is(err, pgx.ErrNoRows):
			// removed (released or cleaned up): not renewed either
		case err != nil:
			t.Fatal(err)
		default:
			if run != l.run || fence != l.fence {
				t.Errorf("%s: held by %s fence %d, want the frozen run %s fence %d", l.session, run, fence, l.run, l.fence)
			}
			if exp.After(expired[l.session]) {
				t.Errorf("%s: renewed after the deadline: expires at %v, was %v while frozen", l.session, exp, expired[l.session])
			}
		}
	}
	var zombies []string
	rows, err = conn.Query(ctx, `SELECT session_id || ': ' || reason FROM lease.event
		WHERE kind = 'renew_rejected' AND run_id = ANY($1) ORDER BY id`, runs)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var z string
		if err := rows.Scan(&z); err != nil {
			t.Fatal(err)
		}
		zombies = append(zombies, z)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(zombies) > 0 {
		t.Errorf("renewals reached the database after the frozen run's deadline (renew_rejected): %q", zombies)
	}
}
