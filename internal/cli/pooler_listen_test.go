package cli_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/cli"
	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/pgserver"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/internal/testkit/syncbuf"
	"github.com/leasetop/leasetop/lease"
	"github.com/leasetop/leasetop/monitor"
)

// leftPoolSize is the PgBouncer pool of TestNoListenLeftInPooler: its
// server connections are few enough to ask each of them.
const leftPoolSize = 4

// TestNoListenLeftInPooler: each tool that follows events (watch's feed,
// run --wait's lease.Client.Wait, events --follow, the exporter) runs through a real PgBouncer
// in transaction mode without a listen DSN, polls, and quits. A LISTEN sent
// through the pooler would stay behind on whichever server connection ran
// it, lent to the next client with it. After the tool quit, 100 transitions
// commit; then no server connection of PgBouncer's listens on anything
// (asked on each, see serverChannels), and PgBouncer's log has no "got
// packet 'A' from server when not linked" (a notification reaching a server
// connection no client holds).
func TestNoListenLeftInPooler(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	direct := pgtest.OpenStore(t, db.URL, data.Options{})
	tools := []struct {
		name string
		run  func(t *testing.T, via string)
	}{
		{"watch (the monitor's feed)", func(t *testing.T, via string) { watchFeed(t, via) }},
		{"run --wait (lease.Client.Wait)", func(t *testing.T, via string) { clientWait(t, direct, via) }},
		{"events --follow", func(t *testing.T, via string) {
			runUntilPolling(t, via, "events", "--follow", "--json")
		}},
		{"exporter", func(t *testing.T, via string) {
			runUntilPolling(t, via, "exporter", "--listen", "127.0.0.1:0")
		}},
	}
	for i, tool := range tools {
		t.Run(tool.name, func(t *testing.T) {
			b := pgtest.Bouncer(t, pgserver.BouncerOptions{PoolSize: leftPoolSize, Settings: bouncerAdmin})
			tool.run(t, db.Via(t, b))
			transitions(t, direct, fmt.Sprintf("left-%d", i), 100)
			for pid, chans := range serverChannels(t, b, db, leftPoolSize) {
				if len(chans) > 0 {
					t.Errorf("server connection %d of PgBouncer listens on %q after %s quit, want nothing", pid, chans, tool.name)
				}
			}
			if n := notLinkedWarnings(t, b); n != 0 {
				t.Errorf("PgBouncer logged %d warnings \"got packet 'A' from server when not linked\", want 0", n)
			}
		})
	}
}

// transitions commits n transitions (acquire, release) on n/2 sessions of
// account acct.
func transitions(t *testing.T, s *data.Store, acct string, n int) {
	t.Helper()
	ctx := context.Background()
	for i := range n / 2 {
		k, run := data.Key{Account: acct, Session: fmt.Sprintf("s%d", i)}, uuid.New()
		if _, err := s.Acquire(ctx, k, run, time.Minute, "transitions"); err != nil {
			t.Fatalf("acquire %v: %v", k, err)
		}
		if ok, err := s.Release(ctx, k, run); err != nil || !ok {
			t.Fatalf("release %v = %v, %v", k, ok, err)
		}
	}
}

// watchFeed runs the monitor's feed (what watch shows) through via until
// its listener polls, then stops it.
func watchFeed(t *testing.T, via string) {
	t.Helper()
	polled := make(chan data.ListenerState, 1)
	s := pgtest.OpenStore(t, via, data.Options{OnPoll: func(st data.ListenerState) { notePoll(polled, st) }})
	f := monitor.NewFeed(s, monitor.FeedConfig{})
	stop := f.Start(context.Background())
	drained := make(chan struct{})
	go func() { // the monitor's loop: take every batch until the feed ends
		defer close(drained)
		for {
			if _, ok := f.Next(); !ok {
				return
			}
		}
	}()
	select {
	case <-polled:
	case <-time.After(30 * time.Second):
		t.Error("the feed through PgBouncer did not poll within 30 s")
	}
	stop()
	<-drained
}

// clientWait is what `run --wait` does (lease.Client.Wait), through via, on
// a session direct holds: it waits until its listener polls, then direct
// releases the session and the waiter gets it, and releases it. (Not `run`
// in-process: it locks its goroutine's OS thread for good, and when Go ends
// that thread the PgBouncer this test started from it gets its
// parent-death signal. internal/supervise's tests run `run --wait` as a process
// through PgBouncer.)
func clientWait(t *testing.T, direct *data.Store, via string) {
	t.Helper()
	ctx := context.Background()
	polled := make(chan data.ListenerState, 1)
	s := pgtest.OpenStore(t, via, data.Options{OnPoll: func(st data.ListenerState) { notePoll(polled, st) }})
	c, err := lease.New(s, lease.Config{TTL: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	k, held := data.Key{Account: "acme", Session: "waited"}, uuid.New()
	if _, err := direct.Acquire(ctx, k, held, time.Minute, "holder"); err != nil {
		t.Fatal(err)
	}
	p, err := c.Authorize(ctx, lease.AuthorizerFunc(func(context.Context, lease.Request) error { return nil }), k, "waiter")
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	got := make(chan error, 1)
	go func() {
		l, err := c.Wait(wctx, p)
		if err == nil {
			err = l.Release(ctx)
		}
		got <- err
	}()
	select {
	case <-polled:
	case <-time.After(30 * time.Second):
		t.Fatal("the waiter's listener through PgBouncer did not poll within 30 s")
	}
	if ok, err := direct.Release(ctx, k, held); err != nil || !ok {
		t.Fatalf("release the held lease = %v, %v", ok, err)
	}
	if err := <-got; err != nil {
		t.Fatalf("Wait, then Release: %v", err)
	}
}

// runUntilPolling runs `leasetop args...` in-process through via until it
// says it polls, then stops it (its context, as Ctrl-C does) and waits for
// it to return.
func runUntilPolling(t *testing.T, via string, args ...string) {
	t.Helper()
	var out, errOut syncbuf.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- cli.Run(ctx, toolEnv(via, &out, &errOut, args...)) }()
	pgtest.Eventually(t, 30*time.Second, args[0]+" to poll", func() bool {
		return strings.Contains(errOut.String(), "polling lease.event")
	})
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("%s returned %v after its context ended, want nil", args[0], err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("%s still running 30 s after its context ended", args[0])
	}
}

// notePoll is an OnPoll hook's body: it must not block.
func notePoll(ch chan data.ListenerState, st data.ListenerState) {
	select {
	case ch <- st:
	default:
	}
}

// toolEnv is the environment of an in-process leasetop through via.
func toolEnv(via string, out, errOut *syncbuf.Buffer, args ...string) cli.Env {
	env := map[string]string{"DATABASE_URL": via, "HOME": os.TempDir()}
	return cli.Env{Args: args, Getenv: func(k string) string { return env[k] },
		Stdin: strings.NewReader(""), Stdout: out, Stderr: errOut}
}
