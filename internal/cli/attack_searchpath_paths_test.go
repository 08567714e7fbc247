package cli_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql's "pgx", for FencedSQLTx

	"github.com/leasetop/leasetop/internal/bench"
	"github.com/leasetop/leasetop/internal/cli"
	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/monitortest"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/internal/testkit/proctest"
	"github.com/leasetop/leasetop/internal/testkit/syncbuf"
	"github.com/leasetop/leasetop/lease"
	"github.com/leasetop/leasetop/monitor"
)

// The paths of TestNothingResolvesOutsidePgCatalogAndLease. Each checks
// that it did what it is for (a path that failed early would resolve
// nothing and prove nothing); set-up goes through the world's admin store,
// whose session is pinned.

// pathRun is one path on one connection kind as one role.
type pathRun struct {
	t    *testing.T
	ctx  context.Context
	w    *shadowWorld
	role string
	via  string
	dsn  string   // the role's URL on this connection kind
	key  data.Key // the path's own session
}

// other is another session of the path's account.
func (r *pathRun) other(n int) data.Key {
	return data.Key{Account: r.key.Account, Session: fmt.Sprintf("other-%d", n)}
}

// hold makes key held for an hour by a run of the admin's, and returns its
// public id.
func (r *pathRun) hold(key data.Key) uuid.UUID {
	r.t.Helper()
	return data.PublicRunID(r.holdRun(key))
}

// holdRun is hold, returning the run's own (secret) id.
func (r *pathRun) holdRun(key data.Key) uuid.UUID {
	r.t.Helper()
	run := uuid.New()
	if _, err := r.w.admin.Acquire(r.ctx, key, run, time.Hour, "holder"); err != nil {
		r.t.Fatalf("hold %v: %v", key, err)
	}
	return run
}

// store opens a store as a program using the library does (data.Open, the
// default options), closed when the path ends.
func (r *pathRun) store() *data.Store {
	r.t.Helper()
	s, err := data.Open(r.ctx, r.dsn)
	if err != nil {
		r.t.Fatalf("data.Open as %s (%s): %v", r.role, r.via, err)
	}
	r.t.Cleanup(s.Close)
	return s
}

// client is a lease.Client on a store of its own, closed when the path ends.
func (r *pathRun) client(cfg lease.Config) *lease.Client {
	r.t.Helper()
	c, err := lease.New(r.store(), cfg)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(c.Close)
	return c
}

var allowAll = lease.AuthorizerFunc(func(context.Context, lease.Request) error { return nil })

func (r *pathRun) permit(c *lease.Client, key data.Key, holder string) lease.Permit {
	r.t.Helper()
	p, err := c.Authorize(r.ctx, allowAll, key, holder)
	if err != nil {
		r.t.Fatal(err)
	}
	return p
}

// try acquires key with c, released when the path ends.
func (r *pathRun) try(c *lease.Client, key data.Key, holder string) *lease.Lease {
	r.t.Helper()
	l, err := c.Try(r.ctx, r.permit(c, key, holder))
	if err != nil {
		r.t.Fatalf("Try(%v): %v", key, err)
	}
	r.t.Cleanup(func() { _ = l.Release(context.Background()) })
	return l
}

// command runs leasetop in-process with args ({account} and {session} replaced
// by the path's key) and wants exit code code.
func command(code int, args ...string) func(r *pathRun) {
	return func(r *pathRun) {
		r.t.Helper()
		out, errOut, got := leasetop(r.ctx, r.dsn, r.args(args)...)
		if got != code {
			r.t.Errorf("leasetop %s: exit %d, want %d: %s%s", strings.Join(args, " "), got, code, out, errOut)
		}
	}
}

func (r *pathRun) args(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = strings.NewReplacer("{account}", r.key.Account, "{session}", r.key.Session).Replace(a)
	}
	return out
}

// process runs leasetop args (as command replaces them) as a process of its
// own with DATABASE_URL=r.dsn.
func (r *pathRun) process(args ...string) *proctest.Process {
	r.t.Helper()
	cmd := exec.Command(builtBinary(r.t), r.args(args)...)
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "DATABASE_URL=") || strings.HasPrefix(kv, "PG")
	}), "DATABASE_URL="+r.dsn)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlives the test binary
	return proctest.Start(r.t, cmd)
}

// runCommand is `leasetop run` as a process, wanting exit code code.
func runCommand(code int, args ...string) func(r *pathRun) {
	return func(r *pathRun) {
		r.t.Helper()
		p := r.process(append([]string{"run", "--account", "{account}", "--session", "{session}"}, args...)...)
		if got := p.Wait(r.t, 60*time.Second); got != code {
			r.t.Errorf("leasetop run %s: exit %d, want %d: %s%s", strings.Join(args, " "), got, code, &p.Stdout, &p.Stderr)
		}
	}
}

// held runs path with the path's key held by another run.
func held(path func(r *pathRun)) func(r *pathRun) {
	return func(r *pathRun) {
		r.hold(r.key)
		path(r)
	}
}

// atLimit runs path with the path's account at its limit of one run,
// held by another session.
func atLimit(path func(r *pathRun)) func(r *pathRun) {
	return func(r *pathRun) {
		r.t.Helper()
		if _, err := r.w.admin.SetLimit(r.ctx, r.key.Account, "", 1); err != nil {
			r.t.Fatalf("set a limit on %s: %v", r.key.Account, err)
		}
		r.hold(r.other(1))
		path(r)
	}
}

// background starts leasetop args in-process and returns its output and a
// function that waits for its exit code.
func (r *pathRun) background(ctx context.Context, args ...string) (out, errOut *syncbuf.Buffer, wait func() int) {
	out, errOut = &syncbuf.Buffer{}, &syncbuf.Buffer{}
	done := make(chan int, 1)
	go func() {
		err := run(ctx, r.dsn, out, errOut, r.args(args)...)
		done <- cli.Report(errOut, err)
	}()
	return out, errOut, func() int {
		select {
		case code := <-done:
			return code
		case <-time.After(60 * time.Second):
			r.t.Fatalf("leasetop %s did not exit within 60s: %s%s", strings.Join(args, " "), out, errOut)
		}
		return 0
	}
}

// renewingClient is a client whose leases renew every half second, and the
// count of its confirmed renewals.
func (r *pathRun) renewingClient() (*lease.Client, *atomic.Int64) {
	renewals := &atomic.Int64{}
	return r.client(lease.Config{TTL: 1500 * time.Millisecond, Metrics: &lease.Metrics{
		RenewFunc: func(_ time.Duration, err error) {
			if err == nil {
				renewals.Add(1)
			}
		}}}), renewals
}

// libraryCycle: Try, SetAttachment, a renewal, Release, and a Try refused
// with the holder's details.
func libraryCycle(r *pathRun) {
	c, renewals := r.renewingClient()
	l := r.try(c, r.key, "cycle")
	if err := l.SetAttachment(r.ctx, "stream-1"); err != nil {
		r.t.Fatalf("SetAttachment: %v", err)
	}
	pgtest.Eventually(r.t, 30*time.Second, "a renewal", func() bool { return renewals.Load() > 0 })
	if err := l.Release(r.ctx); err != nil {
		r.t.Fatalf("Release: %v", err)
	}
	busy := r.other(1)
	r.hold(busy)
	if _, err := c.Try(r.ctx, r.permit(c, busy, "refused")); !errors.Is(err, lease.ErrHeld) {
		r.t.Fatalf("Try of a held lease: %v, want ErrHeld", err)
	}
}

// libraryKeepAlive: two leases of one client, renewed together
// (data.Store.RenewMany).
func libraryKeepAlive(r *pathRun) {
	c, renewals := r.renewingClient()
	r.try(c, r.key, "one")
	r.try(c, r.other(1), "two")
	pgtest.Eventually(r.t, 30*time.Second, "two rounds of renewals", func() bool { return renewals.Load() >= 4 })
}

// libraryFenced: FencedTx on the store's own pool (the bound and the fence
// check in the program's transaction, whose search_path stays its own).
func libraryFenced(r *pathRun) {
	store := r.store()
	c, err := lease.New(store, lease.Config{TTL: 10 * time.Second})
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(c.Close)
	l := r.try(c, r.key, "writer")
	err = l.FencedTx(r.ctx, store.Pool(), func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `SELECT 1`)
		return err
	})
	if err != nil {
		r.t.Fatalf("FencedTx: %v", err)
	}
}

// libraryFencedSQL is libraryFenced through database/sql (pgx's stdlib
// driver), whose statements go through neither pgx's pool nor Pinned.
func libraryFencedSQL(r *pathRun) {
	c := r.client(lease.Config{TTL: 10 * time.Second})
	l := r.try(c, r.key, "writer")
	db, err := sql.Open("pgx", r.dsn)
	if err != nil {
		r.t.Fatal(err)
	}
	defer db.Close()
	err = l.FencedSQLTx(r.ctx, db, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `SELECT 1`)
		return err
	})
	if err != nil {
		r.t.Fatalf("FencedSQLTx: %v", err)
	}
}

// libraryWaitAndQueue: Wait behind a holder, then Queue behind the waiter.
func libraryWaitAndQueue(r *pathRun) {
	holder := r.client(lease.Config{TTL: 10 * time.Second})
	var refused atomic.Int64
	waiter := r.client(lease.Config{TTL: 10 * time.Second, Metrics: &lease.Metrics{
		AcquireFunc: func(_ time.Duration, err error) {
			if errors.Is(err, lease.ErrHeld) {
				refused.Add(1)
			}
		}}})
	queuer := r.client(lease.Config{TTL: 10 * time.Second})
	l := r.try(holder, r.key, "holder")
	waited := make(chan *lease.Lease, 1)
	go func() {
		l, err := waiter.Wait(r.ctx, r.permit(waiter, r.key, "waiter"))
		if err != nil {
			r.t.Errorf("Wait: %v", err)
		}
		waited <- l
	}()
	pgtest.Eventually(r.t, 30*time.Second, "the waiter refused once", func() bool { return refused.Load() > 0 })
	if err := l.Release(r.ctx); err != nil {
		r.t.Fatal(err)
	}
	lw := <-waited
	if lw == nil {
		return
	}
	queued := r.queue(queuer)
	pgtest.Eventually(r.t, 30*time.Second, "a ticket in the queue", func() bool {
		q, err := r.w.admin.QueueOf(r.ctx, r.key)
		return err == nil && len(q) == 1
	})
	if err := lw.Release(r.ctx); err != nil {
		r.t.Fatal(err)
	}
	if lq := <-queued; lq != nil {
		_ = lq.Release(r.ctx)
	}
}

// queue runs c's Queue for r.key in the background; the channel gets its
// lease, or nil after an error the test was told of.
func (r *pathRun) queue(c *lease.Client) <-chan *lease.Lease {
	queued := make(chan *lease.Lease, 1)
	go func() {
		l, err := c.Queue(r.ctx, r.permit(c, r.key, "queuer"))
		if err != nil {
			r.t.Errorf("Queue: %v", err)
		}
		queued <- l
	}()
	return queued
}

// libraryAsk: Ask a holder, which hands over.
func libraryAsk(r *pathRun) {
	holder := r.client(lease.Config{TTL: 10 * time.Second})
	asker := r.client(lease.Config{TTL: 10 * time.Second})
	l := r.try(holder, r.key, "holder")
	done := make(chan error, 1)
	go func() {
		la, err := asker.Ask(r.ctx, r.permit(asker, r.key, "asker"), 30*time.Second, lease.BusyRefuse)
		if err == nil {
			err = la.Release(r.ctx)
		}
		done <- err
	}()
	select {
	case <-l.Asked():
	case <-time.After(30 * time.Second):
		r.t.Fatal("no ask within 30s")
	}
	if err := l.HandOver(r.ctx); err != nil {
		r.t.Fatalf("HandOver: %v", err)
	}
	if err := <-done; err != nil {
		r.t.Fatalf("Ask: %v", err)
	}
}

// libraryPreempt: Preempt a preemptible holder, as a lease_preempt login.
func libraryPreempt(r *pathRun) {
	r.hold(r.key)
	c := r.client(lease.Config{TTL: 10 * time.Second})
	l, err := c.Preempt(r.ctx, r.permit(c, r.key, "preempter"), "maintenance")
	if err != nil {
		r.t.Fatalf("Preempt: %v", err)
	}
	_ = l.Release(r.ctx)
}

// libraryAccountQueue: in an account at its limit, Queue of another session
// waits in the account's queue; a Try behind it is refused; the holder's
// release grants the queued run.
func libraryAccountQueue(r *pathRun) {
	if _, err := r.w.admin.SetLimit(r.ctx, r.key.Account, "", 1); err != nil {
		r.t.Fatalf("set a limit on %s: %v", r.key.Account, err)
	}
	holder := r.holdRun(r.other(1))
	queuer := r.client(lease.Config{TTL: 10 * time.Second})
	queued := r.queue(queuer)
	pgtest.Eventually(r.t, 30*time.Second, "a ticket in the account's queue", func() bool {
		var n int
		err := r.w.admin.Pool().QueryRow(r.ctx, `SELECT count(*) FROM lease.queue_ticket
			WHERE account_id OPERATOR(pg_catalog.=) $1 AND for_slot`, r.key.Account).Scan(&n)
		return err == nil && n == 1
	})
	other := r.client(lease.Config{TTL: 10 * time.Second})
	if _, err := other.Try(r.ctx, r.permit(other, r.other(2), "jumper")); !errors.Is(err, lease.ErrAtLimit) {
		r.t.Errorf("Try behind the account's queue: %v, want ErrAtLimit", err)
	}
	if _, err := r.w.admin.Release(r.ctx, r.other(1), holder); err != nil {
		r.t.Fatal(err)
	}
	if l := <-queued; l != nil {
		_ = l.Release(r.ctx)
	}
}

// libraryPreemptForSlot: in an account at its limit, Preempt of another
// session at a higher priority takes the slot of the account's run.
func libraryPreemptForSlot(r *pathRun) {
	if _, err := r.w.admin.SetLimit(r.ctx, r.key.Account, "", 1); err != nil {
		r.t.Fatalf("set a limit on %s: %v", r.key.Account, err)
	}
	r.hold(r.other(1))
	c := r.client(lease.Config{TTL: 10 * time.Second})
	p, err := c.AuthorizeRequest(r.ctx, allowAll, lease.Request{Key: r.key, Holder: "preempter", Priority: 1})
	if err != nil {
		r.t.Fatal(err)
	}
	l, err := c.Preempt(r.ctx, p, "for a slot")
	if err != nil {
		r.t.Fatalf("Preempt for a slot: %v", err)
	}
	_ = l.Release(r.ctx)
}

// libraryForged: notifications naming the holder's session, which no
// transition sent, make its holder check its row and its client's
// listener read the history back. A forced release after them, which the
// holder must notice by its listener (its next renewal is half a minute
// away), shows that they were handled: the listener handles notifications
// in order. Directly, the forgeries wait for the listener's LISTEN; through
// the pooler it polls, and only the forced release's row reaches it.
func libraryForged(r *pathRun) {
	c := r.client(lease.Config{TTL: 90 * time.Second})
	l := r.try(c, r.key, "holder")
	if r.via == direct {
		// pgxlisten sends its LISTENs one after the other, in no set order,
		// then waits: a listener idle after a LISTEN for a second has sent
		// them all.
		pgtest.Eventually(r.t, 30*time.Second, "the holder's listener to LISTEN", func() bool {
			var n int
			err := r.w.admin.Pool().QueryRow(r.ctx, `SELECT count(*) FROM pg_catalog.pg_stat_activity
				WHERE usename OPERATOR(pg_catalog.=) $1 AND application_name OPERATOR(pg_catalog.=) 'leasetop listener'
				  AND state OPERATOR(pg_catalog.=) 'idle' AND query OPERATOR(pg_catalog.~~*) 'listen %'
				  AND state_change OPERATOR(pg_catalog.<) (pg_catalog.clock_timestamp() OPERATOR(pg_catalog.-) interval '1 second')`,
				r.w.names[r.role]).Scan(&n)
			return err == nil && n > 0
		})
	}
	last, err := r.w.admin.LastEventID(r.ctx)
	if err != nil {
		r.t.Fatal(err)
	}
	for i, kind := range []string{"taken_over", "force_released", "handover_asked"} {
		payload := fmt.Sprintf(`{"id":%d,"kind":%q,"account_id":%q,"session_id":%q,"run_id":%q,"fence":%d}`,
			last+int64(100+i), kind, r.key.Account, r.key.Session, uuid.New(), l.Fence()+1)
		if _, err := r.w.admin.Pool().Exec(r.ctx, `SELECT pg_catalog.pg_notify($1, $2)`, data.Channel, payload); err != nil {
			r.t.Fatal(err)
		}
	}
	if _, err := r.w.admin.ForceReleaseAny(r.ctx, r.key, "after the forgeries"); err != nil {
		r.t.Fatal(err)
	}
	select {
	case <-l.Done():
	case <-time.After(20 * time.Second):
		r.t.Fatal("the holder did not notice the forced release within 20s: its listener never told it")
	}
	if !errors.Is(context.Cause(l.Context()), lease.ErrForceReleased) {
		r.t.Fatalf("holder's cause %v, want ErrForceReleased", context.Cause(l.Context()))
	}
}

// monitorFeed runs the monitor's feed headless on a library store: its
// resync, the read-back of what it hears, and its delta read of renewals.
func monitorFeed(r *pathRun) {
	run := r.holdRun(r.key)
	m := monitortest.NewMirror(r.store(), monitor.FeedConfig{}, monitor.Config{})
	ctx, cancel := context.WithCancel(r.ctx)
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	r.t.Cleanup(func() { cancel(); <-done })
	wctx, wcancel := context.WithTimeout(r.ctx, 30*time.Second)
	defer wcancel()
	var first data.Lease
	if err := m.WaitFor(wctx, func(s *monitor.State) bool { l, ok := s.Lease(r.key); first = l; return ok }); err != nil {
		r.t.Fatalf("the feed's resync never showed %v: %v", r.key, err)
	}
	next := r.other(1)
	r.hold(next)
	if err := m.WaitFor(wctx, func(s *monitor.State) bool { _, ok := s.Lease(next); return ok }); err != nil {
		r.t.Fatalf("the feed never showed %v: %v", next, err)
	}
	if _, err := r.w.admin.Renew(r.ctx, r.key, run, 2*time.Hour); err != nil {
		r.t.Fatal(err)
	}
	if err := m.WaitFor(wctx, func(s *monitor.State) bool {
		l, _ := s.Lease(r.key)
		return l.RenewedAt.After(first.RenewedAt)
	}); err != nil {
		r.t.Fatalf("the feed never showed the renewal of %v: %v", r.key, err)
	}
}

// monitorKeys makes the reads and the forced release the monitor's keys
// make (detail, lockers, queue, timeline), and the other reads of data.
func monitorKeys(r *pathRun) {
	run := r.hold(r.key)
	s := r.store()
	ctx, t := r.ctx, r.t
	check := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Errorf("%s: %v", what, err)
		}
	}
	_, err := s.EventsFor(ctx, r.key, 200)
	check("EventsFor", err)
	_, err = s.Lockers(ctx, r.key)
	check("Lockers", err)
	_, err = s.QueueLengths(ctx)
	check("QueueLengths", err)
	_, err = s.QueueOf(ctx, r.key)
	check("QueueOf", err)
	_, err = s.QueueStats(ctx)
	check("QueueStats", err)
	_, err = s.SendMessage(ctx, r.key, data.MessageSteer, "also check March", "sre", "monitor keys", time.Minute)
	check("SendMessage", err)
	inboxes, err := s.Inboxes(ctx)
	check("Inboxes", err)
	if inboxes[r.key].Live != 1 {
		t.Errorf("Inboxes = %v, want the one message sent to %v", inboxes, r.key)
	}
	now, err := s.ServerTime(ctx)
	check("ServerTime", err)
	_, err = s.OwnersAt(ctx, now, data.HistoryFilter{Keys: []data.Key{r.key}})
	check("OwnersAt", err)
	_, err = s.Replay(ctx, data.HistoryFilter{Keys: []data.Key{r.key}, Since: now.Add(-time.Minute), Until: now})
	check("Replay", err)
	_, err = s.EventsBetween(ctx, data.HistoryFilter{Since: now.Add(-time.Minute), Until: now})
	check("EventsBetween", err)
	last, err := s.LastEventID(ctx)
	check("LastEventID", err)
	_, err = s.EventsByID(ctx, []int64{last})
	check("EventsByID", err)
	_, err = s.EventsSince(ctx, 0, 10)
	check("EventsSince", err)
	_, _, _, err = s.Lease(ctx, r.key)
	check("Lease", err)
	_, err = s.LeasesFor(ctx, []data.Key{r.key})
	check("LeasesFor", err)
	_, err = s.Snapshot(ctx)
	check("Snapshot", err)
	_, err = s.Changed(ctx, now.Add(-time.Minute))
	check("Changed", err)
	_, err = s.ChangedIn(ctx, now.Add(-time.Minute), data.Pages{From: 0, To: 1})
	check("ChangedIn", err)
	_, err = s.LeasePages(ctx)
	check("LeasePages", err)
	_, err = s.ReadSync(ctx, data.SyncQuery{After: -1, Tail: 100})
	check("ReadSync", err)
	_, err = s.PendingAsks(ctx)
	check("PendingAsks", err)
	_, err = s.PendingAsk(ctx, r.key)
	check("PendingAsk", err)
	_, err = s.NotifyQueueUsage(ctx)
	check("NotifyQueueUsage", err)
	_, err = s.NotifyRenewals(ctx)
	check("NotifyRenewals", err)
	_, err = s.Standby(ctx)
	check("Standby", err)
	_, err = s.CheckHolder(ctx, r.key, run, 1)
	check("CheckHolder", err)
	ok, err := s.ForceRelease(ctx, r.key, run, "audit")
	if err != nil || !ok {
		t.Errorf("ForceRelease = %v, %v; want true", ok, err)
	}
	r.hold(r.other(1))
	n, err := s.ForceReleaseAccounts(ctx, []string{r.key.Account}, "audit")
	if err != nil || n != 1 {
		t.Errorf("ForceReleaseAccounts = %d, %v; want 1", n, err)
	}
}

var (
	servingURL = regexp.MustCompile(`exporter serving (http://\S+/metrics)`)
	heldGauge  = regexp.MustCompile(`(?m)^leasetop_leases_held [1-9]`)
)

// exporterScrape runs `leasetop exporter` until a scrape shows the held
// lease.
func exporterScrape(r *pathRun) {
	r.hold(r.key)
	ctx, cancel := context.WithCancel(r.ctx)
	_, errOut, wait := r.background(ctx, "exporter", "--listen", "127.0.0.1:0")
	defer func() { cancel(); wait() }()
	var url string
	pgtest.Eventually(r.t, 30*time.Second, "the exporter to serve", func() bool {
		m := servingURL.FindStringSubmatch(errOut.String())
		if m != nil {
			url = m[1]
		}
		return m != nil
	})
	pgtest.Eventually(r.t, 30*time.Second, "a scrape with the held lease", func() bool {
		resp, err := http.Get(url)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode == http.StatusOK && heldGauge.Match(body)
	})
}

// eventsFollow runs `events --follow` until it printed the history and then
// an acquisition made after it.
func eventsFollow(r *pathRun) {
	r.hold(r.key)
	ctx, cancel := context.WithCancel(r.ctx)
	out, _, wait := r.background(ctx, "events", "--follow", "--account", "{account}")
	defer func() { cancel(); wait() }()
	pgtest.Eventually(r.t, 30*time.Second, "events --follow to print the history", func() bool {
		return strings.Contains(out.String(), r.key.Session)
	})
	next := r.other(1)
	r.hold(next)
	pgtest.Eventually(r.t, 30*time.Second, "events --follow to print an acquisition as it happens", func() bool {
		return strings.Contains(out.String(), next.Session)
	})
}

// runQueued runs `run --on-busy queue` behind a library holder, which
// releases once the ticket is in.
func runQueued(r *pathRun) {
	l := r.try(r.client(lease.Config{TTL: 10 * time.Second}), r.key, "holder")
	p := r.process("run", "--account", "{account}", "--session", "{session}", "--on-busy", "queue", "--", "true")
	pgtest.Eventually(r.t, 30*time.Second, "a ticket in the queue", func() bool {
		q, err := r.w.admin.QueueOf(r.ctx, r.key)
		return err == nil && len(q) == 1
	})
	if err := l.Release(r.ctx); err != nil {
		r.t.Fatal(err)
	}
	if code := p.Wait(r.t, 60*time.Second); code != 0 {
		r.t.Errorf("run --on-busy queue: exit %d, want 0: %s%s", code, &p.Stdout, &p.Stderr)
	}
}

// runAsk runs `run --on-busy ask` against a library holder, which hands
// over when asked.
func runAsk(r *pathRun) {
	l := r.try(r.client(lease.Config{TTL: 10 * time.Second}), r.key, "holder")
	p := r.process("run", "--account", "{account}", "--session", "{session}", "--on-busy", "ask", "--ask-timeout", "30s", "--", "true")
	select {
	case <-l.Asked():
	case <-time.After(30 * time.Second):
		r.t.Fatalf("no ask within 30s: %s%s", &p.Stdout, &p.Stderr)
	}
	if err := l.HandOver(r.ctx); err != nil {
		r.t.Fatalf("HandOver: %v", err)
	}
	if code := p.Wait(r.t, 60*time.Second); code != 0 {
		r.t.Errorf("run --on-busy ask: exit %d, want 0: %s%s", code, &p.Stdout, &p.Stderr)
	}
}

// demoHeadless runs `leasetop demo --headless` on the database for a few
// seconds: its tables, its device processes, its report and invariant
// check.
func demoHeadless(r *pathRun) {
	p := r.process("demo", "--headless", "--dsn", r.dsn, "--duration", "3s", "--accounts", "1", "--sessions", "1",
		"--devices", "desktop,phone", "--ttl", "2s", "--seed", "7")
	if code := p.Wait(r.t, 120*time.Second); code != 0 {
		r.t.Errorf("demo --headless: exit %d, want 0: %s%s", code, &p.Stdout, &p.Stderr)
	}
}

// benchTiny runs every default workload of `leasetop bench` for a moment.
func benchTiny(r *pathRun) {
	rep, err := bench.Run(r.ctx, bench.Config{DSN: r.dsn, Clients: 2, Keys: 4, Duration: 30 * time.Millisecond})
	if err != nil {
		r.t.Fatalf("bench: %v", err)
	}
	for _, res := range rep.Results {
		if res.Error != "" {
			r.t.Errorf("bench %s: %s", res.Name, res.Error)
		}
	}
}

// libraryInbox: a holder reads its Messages and acknowledges them, a
// sender's SendWait sees its steer acknowledged by that run, Follow gives
// the holder, and a cancel ends the holder's context.
func libraryInbox(r *pathRun) {
	ctx, cancel := context.WithCancel(r.ctx)
	defer cancel()
	hc := r.client(lease.Config{TTL: 10 * time.Second})
	l := r.try(hc, r.key, "holder")
	ms := l.Messages()
	go func() {
		for m := range ms {
			_ = m.Ack(ctx)
		}
	}()
	owners, err := hc.Follow(ctx, r.key)
	if err != nil {
		r.t.Fatalf("Follow: %v", err)
	}
	if o := <-owners; o.RunID != l.RunID() {
		r.t.Errorf("Follow's first owner %+v, want run %s", o, l.RunID())
	}
	sc := r.client(lease.Config{TTL: 10 * time.Second, PollInterval: 200 * time.Millisecond})
	p := r.permit(sc, r.key, "phone")
	sent, err := sc.SendWait(ctx, p, lease.Message{Kind: lease.SteerMessage, Body: "also check March"}, lease.MessageAcked)
	if err != nil || sent.RunID != l.RunID() {
		r.t.Fatalf("SendWait = %+v, %v, want acknowledged by run %s", sent, err, l.RunID())
	}
	if _, err := sc.Send(ctx, p, lease.Message{Kind: lease.CancelMessage, Body: "stop"}); err != nil {
		r.t.Fatalf("Send cancel: %v", err)
	}
	select {
	case <-l.Done():
		if !errors.Is(l.Err(), lease.ErrCancelled) {
			r.t.Errorf("the holder's context ended with %v, want ErrCancelled", l.Err())
		}
	case <-time.After(30 * time.Second):
		r.t.Fatal("the cancel did not reach the holder within 30s")
	}
}

// runInbox runs `leasetop run --on-cancel stop` whose command reads its
// steer with `leasetop inbox`, sends it one with `send --wait acked`, then
// a cancel, which stops the run (exit 8).
func runInbox(r *pathRun) {
	bin, err := leasetopBinary()
	if err != nil {
		r.t.Fatal(err)
	}
	p := r.process("run", "--account", "{account}", "--session", "{session}", "--on-cancel", "stop", "--pass-db-env", "--",
		"sh", "-c", bin+" inbox --wait 30s && sleep 60")
	pgtest.Eventually(r.t, 30*time.Second, "the run to hold its session", func() bool {
		_, _, held, err := r.w.admin.Lease(r.ctx, r.key)
		return err == nil && held
	})
	command(0, "send", "--account", "{account}", "--session", "{session}", "--wait", "acked", "also check March")(r)
	pgtest.Eventually(r.t, 30*time.Second, "the command to print its steer", func() bool {
		return strings.Contains(p.Stdout.String(), "also check March")
	})
	command(0, "send", "--account", "{account}", "--session", "{session}", "--cancel", "--wait", "acked", "stop")(r)
	if code := p.Wait(r.t, 60*time.Second); code != cli.ExitCancelled {
		r.t.Errorf("run after the cancel: exit %d, want %d: %s%s", code, cli.ExitCancelled, &p.Stdout, &p.Stderr)
	}
}

// runSteer runs `run --on-busy steer` against a library holder that reads
// its messages.
func runSteer(r *pathRun) {
	l := r.try(r.client(lease.Config{TTL: 10 * time.Second}), r.key, "holder")
	go func() {
		for m := range l.Messages() {
			_ = m.Ack(r.ctx)
		}
	}()
	command(0, "run", "--account", "{account}", "--session", "{session}", "--on-busy", "steer", "--message", "also check March", "--", "true")(r)
}

// followCommand runs `leasetop follow` until it printed a change of owner.
func followCommand(r *pathRun) {
	ctx, cancel := context.WithCancel(r.ctx)
	out, errOut, wait := r.background(ctx, "follow", "--account", "{account}", "--session", "{session}")
	pgtest.Eventually(r.t, 30*time.Second, "follow to print the conversation's owner", func() bool {
		return strings.Contains(out.String(), `"state":"free"`)
	})
	run := r.hold(r.key)
	pgtest.Eventually(r.t, 30*time.Second, "follow to print the new owner", func() bool {
		return strings.Contains(out.String(), run.String())
	})
	cancel()
	wait()
	_ = errOut
}
