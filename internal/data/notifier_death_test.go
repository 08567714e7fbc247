package data_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/sqlcall"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/lease"
	"github.com/leasetop/leasetop/monitor"
)

// The notifier is this test binary started again as the process that makes
// a transition and was to notify it: it stops between its commit and its
// notification (the store's after-commit hook, which in production is not
// there: the notification goes out in the same write as the call) and says
// so on stdout; the test kills it there with SIGKILL. What it committed was
// never notified, by the trigger (it opted out) or by itself.
const (
	envNotifier    = "DATA_TEST_NOTIFIER"     // its mode: notifyAcquire or notifyRelease
	envNotifierDSN = "DATA_TEST_NOTIFIER_DSN" // its database
)

const (
	notifyAcquire = "acquire" // acquire the key, stop after the commit
	notifyRelease = "release" // hold the key; on a line on stdin, release it, stop after the commit
)

var notifierKey = data.Key{Account: "acme", Session: "notifier"}

// notifierMain is the notifier's main; it returns the exit code. It prints
// "holding" once it holds the key (notifyRelease) and "committed" in the
// window, where it waits to be killed.
func notifierMain(mode string) int {
	ctx := context.Background()
	store, err := data.Open(ctx, os.Getenv(envNotifierDSN))
	if err != nil {
		fmt.Println("notifier:", err)
		return 1
	}
	defer store.Close()
	run := uuid.New()
	if mode == notifyRelease {
		if _, err := store.Acquire(ctx, notifierKey, run, time.Hour, "notifier"); err != nil {
			fmt.Println("notifier:", err)
			return 1
		}
		fmt.Println("holding")
		if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
			return 1
		}
	}
	data.SetAfterCommit(store, func() {
		fmt.Println("committed")
		_, _ = io.Copy(io.Discard, os.Stdin) // until killed
	})
	switch mode {
	case notifyAcquire:
		_, err = store.Acquire(ctx, notifierKey, run, time.Hour, "notifier")
	case notifyRelease:
		_, err = store.Release(ctx, notifierKey, run)
	}
	fmt.Println("notifier: not stopped in the window:", err)
	return 1
}

// notifier is a running notifier process.
type notifier struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan line // its stdout, line by line, with when each arrived
	wg    sync.WaitGroup
}

type line struct {
	text string
	at   time.Time
}

func startNotifier(t *testing.T, db pgtest.DB, mode string) *notifier {
	t.Helper()
	n := &notifier{cmd: exec.Command(os.Args[0], "-test.run=^$"), lines: make(chan line, 16)}
	n.cmd.Env = append(os.Environ(), envNotifier+"="+mode, envNotifierDSN+"="+db.URL)
	n.cmd.Stderr = os.Stderr
	out, err := n.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if n.stdin, err = n.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := n.cmd.Start(); err != nil {
		t.Fatalf("start the notifier: %v", err)
	}
	n.wg.Go(func() {
		defer close(n.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			n.lines <- line{text: sc.Text(), at: time.Now()}
		}
	})
	t.Cleanup(func() {
		_ = n.cmd.Process.Kill()
		_ = n.cmd.Wait()
		n.wg.Wait()
	})
	return n
}

// expect waits for the notifier's next line, which must be want, and
// returns when it arrived.
func (n *notifier) expect(t *testing.T, want string) time.Time {
	t.Helper()
	select {
	case l, ok := <-n.lines:
		if !ok || l.text != want {
			t.Fatalf("notifier said %q (open %v), want %q", l.text, ok, want)
		}
		return l.at
	case <-time.After(30 * time.Second):
		t.Fatalf("the notifier did not say %q within 30s", want)
	}
	return time.Time{}
}

// kill sends SIGKILL and waits until the process is gone.
func (n *notifier) kill(t *testing.T) {
	t.Helper()
	if err := n.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill the notifier: %v", err)
	}
	_ = n.cmd.Wait()
}

// feedEvents runs a monitor.Feed, the monitor's data layer, on its own
// store, and reports each event of key with when the feed delivered it. It
// returns once the feed's first resync is in.
func feedEvents(t *testing.T, db pgtest.DB, key data.Key) <-chan line {
	t.Helper()
	feed := monitor.NewFeed(db.Store(t), monitor.FeedConfig{})
	stop := feed.Start(context.Background())
	got := make(chan line, 64)
	synced := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		first := true
		for {
			b, ok := feed.Next()
			if !ok {
				return
			}
			at := time.Now()
			for _, it := range b.Items {
				if it.Sync != nil && first {
					first = false
					close(synced)
				}
				if it.Event != nil && it.Event.Key == key {
					got <- line{text: string(it.Event.Kind), at: at}
				}
			}
		}
	})
	t.Cleanup(func() { stop(); wg.Wait() })
	select {
	case <-synced:
	case <-time.After(30 * time.Second):
		t.Fatal("the monitor's feed did not sync within 30s")
	}
	return got
}

// waitFor returns when the feed delivered an event of kind want.
func waitFor(t *testing.T, evs <-chan line, want data.Kind) time.Time {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case l := <-evs:
			if l.text == string(want) {
				return l.at
			}
		case <-deadline:
			t.Fatalf("the monitor's feed did not deliver %s within 30s", want)
		}
	}
}

// refusals counts the acquires of a store that came back refused.
type refusals struct{ n atomic.Int64 }

type tracedCall struct{}

func (r *refusals) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if d.SQL == sqlcall.Acquire {
		return context.WithValue(ctx, tracedCall{}, true)
	}
	return ctx
}

func (r *refusals) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryEndData) {
	if ctx.Value(tracedCall{}) != nil && d.Err == nil && d.CommandTag.RowsAffected() == 0 {
		r.n.Add(1)
	}
}

// TestNotifierKilledBetweenCommitAndNotification kills, with SIGKILL, the
// process that made a transition after its commit and before its
// notification. The monitor's feed and a waiting lease.Client.Wait still
// see the transition, by the listeners' catch-up (it reads lease.event
// every ListenerConfig.CatchUp, 300 ms by default), and nobody ever
// received a notification of it.
func TestNotifierKilledBetweenCommitAndNotification(t *testing.T) {
	// Without the catch-up, the waiter would learn of the release only at
	// its fallback poll, an hour away here, and the feed at its next
	// resync, which nothing here asks for: 20 s tells the catch-up from
	// those on any machine, where a bound of a second measured the load
	// (the catch-up takes about 300 ms on an idle one; the log says).
	const within = 20 * time.Second
	t.Run("release, with a waiter", func(t *testing.T) {
		db := pgtest.New(t)
		drain := collect(t, db.Conn(t), db.Conn(t))
		n := startNotifier(t, db, notifyRelease)
		n.expect(t, "holding")
		evs := feedEvents(t, db, notifierKey)

		// The waiter: a Client whose only way to learn of the release is its
		// listener (its holder's lease lasts an hour, its poll an hour).
		cfg, err := pgxpool.ParseConfig(db.URL)
		if err != nil {
			t.Fatal(err)
		}
		tr := &refusals{}
		cfg.ConnConfig.Tracer = tr
		pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer pool.Close()
		client, err := lease.New(data.New(pool), lease.Config{TTL: time.Minute, PollInterval: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		defer client.Close()
		permit, err := client.Authorize(context.Background(), allowAll{}, notifierKey, "waiter")
		if err != nil {
			t.Fatal(err)
		}
		type won struct {
			l  *lease.Lease
			at time.Time
		}
		got := make(chan won, 1)
		errs := make(chan error, 1)
		wctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		defer wg.Wait()
		defer cancel()
		wg.Go(func() {
			l, err := client.Wait(wctx, permit)
			if err != nil {
				errs <- err
				return
			}
			got <- won{l, time.Now()}
		})
		// Refused twice: the second attempt follows a wake-up, and the only
		// one before the release is the listener's first resync, once live.
		pgtest.Eventually(t, 30*time.Second, "the waiter to be refused twice", func() bool { return tr.n.Load() >= 2 })

		if _, err := io.WriteString(n.stdin, "release\n"); err != nil {
			t.Fatal(err)
		}
		committed := n.expect(t, "committed")
		n.kill(t)

		select {
		case w := <-got:
			defer w.l.Release(context.Background()) //nolint:errcheck // the test's own lease
			t.Logf("the waiter owned the lease %v after the killed notifier's commit", w.at.Sub(committed))
			if took := w.at.Sub(committed); took > within {
				t.Errorf("the waiter owned the lease %v after the killed notifier's commit, want <= %v", took, within)
			}
		case err := <-errs:
			t.Fatalf("Wait: %v", err)
		case <-time.After(30 * time.Second):
			t.Fatal("the waiter did not get the lease within 30s of the release")
		}
		took := waitFor(t, evs, data.KindReleased).Sub(committed)
		t.Logf("the monitor's feed delivered the release %v after its commit", took)
		if took > within {
			t.Errorf("the monitor's feed delivered the release %v after its commit, want <= %v", took, within)
		}
		for _, p := range drain() {
			if strings.Contains(p, `"kind":"released"`) {
				t.Errorf("a notification of the killed notifier's release arrived: %s", p)
			}
		}
	})
	t.Run("acquire", func(t *testing.T) {
		db := pgtest.New(t)
		drain := collect(t, db.Conn(t), db.Conn(t))
		evs := feedEvents(t, db, notifierKey)
		n := startNotifier(t, db, notifyAcquire)
		committed := n.expect(t, "committed")
		n.kill(t)
		took := waitFor(t, evs, data.KindAcquired).Sub(committed)
		t.Logf("the monitor's feed delivered the acquire %v after its commit", took)
		if took > within {
			t.Errorf("the monitor's feed delivered the acquire %v after its commit, want <= %v", took, within)
		}
		if got := drain(); len(got) != 0 {
			t.Errorf("notifications %q arrived of the killed notifier's acquire, want none", got)
		}
	})
}

type allowAll struct{}

func (allowAll) Authorize(context.Context, lease.Request) error { return nil }
