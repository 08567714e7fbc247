package faults_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/lease"
	"github.com/leasetop/leasetop/monitor"
)

// Fault 3: the network between a holder and the database is blackholed (the
// proxy forwards nothing and closes nothing: no error, no reply) while it
// holds the session two other holders wait for. Its renewal hangs until its
// timeout, it reports the lease at risk, and its local deadline stops its
// work before the lease expires on the server; a waiting holder takes the
// session over only after that expiry. When the network heals, the proxy
// delivers what it held of the cut-off holder's requests, and its client
// works again. What it held is the renewal, or, more often, pgxpool's
// liveness ping of the idle connection the renewal was to use (the pool
// pings one idle for a second before handing it out): so the renewal need
// not reach the server late, and the test does not promise the
// renew_rejected a late one would record, only that requests were held.
func TestHolderBlackhole(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, 1)
	key := r.keys[0]
	proxy, via := pgtest.Proxied(r.t, r.url)
	m := r.startMirror(r.url, mirrorCfg())
	const ttl = 3 * time.Second
	client, err := lease.New(pgtest.OpenStore(t, via, data.Options{}), crewTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	h := &holder{rig: r, name: "cut-off", client: client, writes: pgtest.OpenStore(t, r.url, data.Options{}), rng: rand.New(rand.NewPCG(1, 2))}
	permit, err := client.Authorize(ctx, lease.AuthorizerFunc(allow), key, h.name)
	if err != nil {
		t.Fatal(err)
	}
	l, err := client.Try(ctx, permit)
	if err != nil {
		t.Fatalf("Try: %v", err)
	}
	r.started(l)
	granted := l.State().ExpiresAt

	var wg sync.WaitGroup
	wg.Go(func() { h.work(ctx, l, time.Hour) }) // until the lease is lost
	var statuses []lease.Status
	wg.Go(func() {
		for {
			select {
			case <-l.Changed():
				if st := l.State().Status; len(statuses) == 0 || statuses[len(statuses)-1] != st {
					statuses = append(statuses, st)
				}
			case <-l.Done():
				return
			}
		}
	})
	c := r.startCrew(crewConfig{holders: 2, lease: crewTTL(ttl)}) // both wait for the one session
	pgtest.Eventually(t, 30*time.Second, "a confirmed renewal", func() bool { return l.State().ExpiresAt.After(granted) })
	snap, err := r.store.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}

	proxy.Blackhole()
	cut := time.Now()
	select {
	case <-l.Done():
	case <-time.After(30 * time.Second):
		t.Fatalf("the cut-off holder still holds its lease 30 s after the blackhole: %+v", l.State())
	}
	wg.Wait()
	lostAt := l.State().Since
	if !errors.Is(l.Err(), lease.ErrExpired) {
		t.Errorf("the cut-off holder lost its lease with %v, want its local deadline (ErrExpired)", l.Err())
	}
	if !slices.Contains(statuses, lease.AtRisk) || l.State().Status != lease.Lost {
		t.Errorf("statuses %v then %v, want at risk, then lost", statuses, l.State().Status)
	}
	var over data.Event
	pgtest.Eventually(t, 30*time.Second, "a waiting holder to take the session over", func() bool {
		for _, ev := range r.events() {
			if ev.Kind == data.KindTakenOver && ev.PrevRunID == l.RunID() {
				over = ev
				return true
			}
		}
		return false
	})
	stoppedBefore := over.PrevExpiresAt.Sub(snap.Clock.At(lostAt))
	if stoppedBefore <= 0 {
		t.Errorf("the cut-off holder stopped at %v (server clock), %s after its lease expired on the server at %v",
			snap.Clock.At(lostAt), -stoppedBefore, over.PrevExpiresAt)
	}
	if over.At.Before(over.PrevExpiresAt) {
		t.Errorf("taken over at %v, before the cut-off holder's lease expired at %v", over.At, over.PrevExpiresAt)
	}
	_ = l.Release(ctx)
	r.ended(l, true)

	if proxy.Held() == 0 {
		t.Fatal("the proxy held none of the cut-off holder's requests: the test did not cut it off")
	}
	proxy.Resume()
	healed := time.Now()
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	again, err := client.Wait(wctx, permit)
	if err != nil {
		t.Fatalf("the cut-off holder's client after the network healed: Wait: %v", err)
	}
	recovered := time.Since(healed)
	r.started(again)
	if err := again.Release(ctx); err != nil {
		t.Fatal(err)
	}
	r.ended(again, false)
	c.stop()
	tally := r.audit(m)
	report(t, "holder-blackhole", append([]any{"ttl", ttl, "lost_after_cut", lostAt.Sub(cut),
		"stopped_before_server_expiry_by", stoppedBefore, "taken_over_after_expiry_by", over.At.Sub(over.PrevExpiresAt),
		"client_recovered_in", recovered}, tallyKV(tally)...)...)
}

// Fault 4: the network between the monitor (in the terminal's
// configuration) and the database is blackholed while holders churn. Within
// seconds the header leaves LIVE: the feed reads the database every second,
// and a read unanswered for a second more plus monitor.NoAnswerAfter says
// NO ANSWER, before the listener notices (it pings itself after 5 s of
// silence and drops a connection that does not answer within 3 s). The
// picture shows as stale (no read succeeded for monitor.StaleAfter), then
// DOWN; after the network heals it is LIVE again and has caught up with
// every transition it missed.
func TestMonitorBlackhole(t *testing.T) {
	r := newRig(t, 3)
	proxy, via := pgtest.Proxied(r.t, r.url)
	m := r.startMirror(via, monitor.FeedConfig{}) // the terminal's configuration
	c := r.startCrew(crewConfig{holders: 4, lease: crewTTL(2 * time.Second)})
	r.waitRuns(t, 5)

	proxy.Blackhole()
	cut := time.Now()
	var left monitor.Health
	waitMirror(t, m, 30*time.Second, "the header to leave LIVE", func(s *monitor.State) bool {
		left = s.Health(time.Now())
		return left.Link != monitor.LinkLive
	})
	noticed := time.Since(cut)
	if left.NoAnswer == 0 {
		t.Errorf("the header left LIVE for %v only when the listener noticed (%v), want it to leave on the unanswered reads first", left.Link, left.Err)
	}
	waitMirror(t, m, 30*time.Second, "the header to show the picture stale", func(s *monitor.State) bool {
		return s.Health(time.Now()).Stale
	})
	stale := time.Since(cut)
	waitMirror(t, m, 30*time.Second, "the header to show DOWN", func(s *monitor.State) bool {
		return s.Health(time.Now()).Link == monitor.LinkDown
	})
	down := time.Since(cut)
	r.waitRuns(t, 5) // transitions the monitor cannot see
	blackout := time.Since(cut)

	proxy.Resume()
	converged := r.converge(m, time.Now())
	c.stop()
	tally := r.audit(m)
	report(t, "monitor-blackhole", append([]any{"header_stale_in", stale, "header_not_live_in", noticed, "header_down_in", down,
		"blackout", blackout, "converged_in", converged}, tallyKV(tally)...)...)
}
