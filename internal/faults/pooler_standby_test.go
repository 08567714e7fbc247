package faults_test

import (
	"context"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/pgserver"
	"github.com/leasetop/leasetop/internal/testkit/monitortest"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/monitor"
)

// linkOf is the header's link in m now.
func linkOf(m *monitortest.Mirror) monitor.Link {
	var l monitor.Link
	m.Read(func(s *monitor.State) { l = s.Health(time.Now()).Link })
	return l
}

// watchVia runs a headless monitor on store until the test ends, waits until
// it has read the database once and its header says want, and records every
// connection status its batches carry from then on.
func (r *rig) watchVia(store *data.Store, want monitor.Link) (*monitortest.Mirror, *statusLog) {
	r.t.Helper()
	m := monitortest.NewMirror(store, mirrorCfg(), monitor.Config{})
	r.runMirrorUntil(m, "the monitor to say "+want.String(), func(s *monitor.State) bool {
		return s.Synced() && s.Health(time.Now()).Link == want
	})
	log := &statusLog{}
	m.OnBatch(log.add)
	return m, log
}

// statusLog is the sequence of distinct listener statuses a monitor's
// batches carried.
type statusLog struct {
	mu   sync.Mutex
	seen []data.ListenerStatus
}

func (l *statusLog) add(b monitor.Batch) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := len(l.seen); n == 0 || l.seen[n-1] != b.Conn.Status {
		l.seen = append(l.seen, b.Conn.Status)
	}
}

// changes returns how many times the status changed.
func (l *statusLog) changes() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return max(len(l.seen)-1, 0)
}

func (l *statusLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var parts []string
	for _, s := range l.seen {
		parts = append(parts, s.String())
	}
	return strings.Join(parts, "→")
}

// convergeTo waits until m's header says want and m has applied every event
// r's database has now, and returns the time since t0.
func (r *rig) convergeTo(m *monitortest.Mirror, want monitor.Link, t0 time.Time) time.Duration {
	r.t.Helper()
	var baseline int64
	m.Read(func(s *monitor.State) { baseline = s.Baseline() })
	ids := r.eventIDs(baseline)
	waitMirror(r.t, m, 60*time.Second, "the monitor to say "+want.String()+" and catch up", func(s *monitor.State) bool {
		return s.Health(time.Now()).Link == want && seenAll(s, ids)
	})
	return time.Since(t0)
}

// Fault: the transaction pooler restarts while holders and two monitors
// work through it. PgBouncer (transaction mode) is stopped with SIGINT, its
// safe shutdown, and started again on its port a TTL later. The holders
// reach the database only through it; one monitor polls through it (no
// listen DSN), the other reads through it and listens on a direct listen
// DSN. The holders that could not renew in time stop by their local
// deadline, the others take over; both monitors converge with every event
// applied once, and the polling one's header is POLL again without ever
// having said LIVE.
func TestPoolerRestart(t *testing.T) {
	r := newRig(t, 3)
	b := pgtest.Bouncer(t, pgserver.BouncerOptions{PoolSize: 8})
	via, err := b.Via(r.url)
	if err != nil {
		t.Fatal(err)
	}
	polling, pollLog := r.watchVia(pgtest.OpenStore(t, via, data.Options{}), monitor.LinkPoll)
	listening, _ := r.watchVia(pgtest.OpenStore(t, via, data.Options{ListenDSN: r.url}), monitor.LinkLive)
	const ttl = 2 * time.Second
	c := r.startCrew(crewConfig{holders: 4, lease: crewTTL(ttl), leaseDSN: func(int) string { return via }})
	r.waitRuns(t, 5)

	down := time.Now()
	b.Stop()
	stopped := time.Since(down)
	waitMirror(t, polling, 30*time.Second, "the polling monitor to leave POLL", func(s *monitor.State) bool {
		return s.Health(time.Now()).Link != monitor.LinkPoll
	})
	noticed := time.Since(down)
	time.Sleep(time.Until(down.Add(scale(ttl, 3*ttl)))) // the fault's length, not a wait for readiness
	outage := time.Since(down)
	if err := b.Restart(context.Background()); err != nil {
		t.Fatalf("restart PgBouncer: %v", err)
	}
	up := time.Now()
	r.waitRuns(t, 1)
	recovered := time.Since(up)
	converged := r.convergeTo(polling, monitor.LinkPoll, up)
	convergedListening := r.convergeTo(listening, monitor.LinkLive, up)
	r.waitRuns(t, 3)
	c.stop()
	tally := r.audit(polling)
	r.mirrorsDB(listening)
	if s := pollLog.String(); strings.Contains(s, "LIVE") {
		t.Errorf("the polling monitor's statuses %s: want never LIVE", s)
	}
	report(t, "pooler-restart", append([]any{"sigint_stop_took", stopped, "polling_monitor_noticed_in", noticed,
		"outage", outage, "first_run_after_restart_in", recovered, "polling_monitor_converged_in", converged,
		"listening_monitor_converged_in", convergedListening, "polling_statuses", pollLog}, tallyKV(tally)...)...)
}

// Fault: the hot standby a read-only monitor watches is promoted while
// holders work on the primary. Before, the monitor (a lease_reader, polling
// because LISTEN cannot run on a standby) shows the standby's replay lag and
// every transition the standby replayed. Promotion ends recovery on its
// open connections: the header drops the standby badge and stays POLL (no
// flapping), and once holders work on the promoted server, the monitor
// equals it, every one of its events applied exactly once (what the old
// primary committed after the promotion never reaches it, and is not
// expected).
func TestStandbyPromotion(t *testing.T) {
	r := newRig(t, 3)
	reader, _ := pgtest.Login(t, r.db(), "lease_reader")
	standby := pgtest.Standby(t)
	m, statuses := r.watchVia(pgtest.OpenStore(t, pgtest.DB{URL: reader}.On(t, standby), data.Options{}), monitor.LinkPoll)
	const ttl = 2 * time.Second
	c := r.startCrew(crewConfig{holders: 4, lease: crewTTL(ttl)})
	r.waitRuns(t, 5)
	pgtest.WaitReplayed(t, standby)
	r.convergeTo(m, monitor.LinkPoll, time.Now())
	var lag time.Duration
	waitMirror(t, m, 30*time.Second, "the standby's replay lag", func(s *monitor.State) bool {
		h := s.Health(time.Now())
		lag = h.ReplayLag
		return h.Standby && h.LagKnown
	})

	promoted := time.Now()
	if err := standby.Promote(context.Background()); err != nil {
		t.Fatal(err)
	}
	promotion := time.Since(promoted)
	waitMirror(t, m, 30*time.Second, "the header to drop the standby badge", func(s *monitor.State) bool {
		return !s.Health(time.Now()).Standby
	})
	noticed := time.Since(promoted)
	c.stop()

	// The promoted server is a primary of its own now: holders move to it.
	after := newRigOn(t, pgtest.DB{URL: r.url}.On(t, standby), 3)
	c2 := after.startCrew(crewConfig{holders: 4, lease: crewTTL(ttl)})
	after.waitRuns(t, 5)
	c2.stop()
	converged := after.convergeTo(m, monitor.LinkPoll, promoted)
	after.mirrorsDB(m)
	if n := statuses.changes(); n != 0 {
		t.Errorf("the header's status changed %d times (%s) across the promotion, want never", n, statuses)
	}
	report(t, "standby-promotion", "replay_lag_before", lag, "promote_took", promotion,
		"header_dropped_standby_in", noticed, "converged_on_promoted_in", converged, "status_changes", statuses.changes(),
		"runs_on_promoted", after.runCount())
}

// End to end: the real `leasetop watch --read-only`, as a lease_reader, on
// a pty, against a hot standby, shows the picture: POLL with its interval,
// the replay lag, [RO], the lease the primary granted; q exits 0.
func TestWatchReadOnlyOnStandby(t *testing.T) {
	r := newRig(t, 1)
	reader, _ := pgtest.Login(t, r.db(), "lease_reader")
	standby := pgtest.Standby(t)
	r.exec(`SELECT lease.acquire($1, $2, $3, '1 min', 'dev-on-primary')`, r.keys[0].Account, r.keys[0].Session, uuid.New())
	p := openPTY(t, 120, 30)
	cmd := exec.Command(leasetopBin, "watch", "--read-only", "--dsn", pgtest.DB{URL: reader}.On(t, standby))
	cmd.Stdin, cmd.Stdout, cmd.Stderr = p.term, p.term, p.term
	cmd.Env = append(os.Environ(), "TERM=xterm-256color", "XDG_CONFIG_HOME="+t.TempDir())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	w := startProc(t, cmd)
	p.readOutput()
	pgtest.Eventually(t, 30*time.Second, "the standby's picture", func() bool {
		s := p.screen()
		return strings.Contains(s, "◌ POLL 250ms") && strings.Contains(s, "standby lag") &&
			strings.Contains(s, "[RO]") && strings.Contains(s, "dev-on-primary")
	})
	screen := p.screen()
	p.typeKeys(t, "q")
	if code := w.wait(t); code != 0 {
		t.Errorf("leasetop watch exit = %d after q, want 0; screen: %q", code, p.screen())
	}
	lags := regexp.MustCompile(`standby lag [0-9.]+[a-z]+`).FindAllString(screen, -1)
	report(t, "watch-read-only-on-standby", "link", "◌ POLL 250ms", "shown", lags[len(lags)-1], "exit_after_q", 0)
}

// db is the rig's database as pgtest knows it.
func (r *rig) db() pgtest.DB {
	r.t.Helper()
	u, err := url.Parse(r.url)
	if err != nil {
		r.t.Fatal(err)
	}
	return pgtest.DB{URL: r.url, Name: strings.TrimPrefix(u.Path, "/")}
}

// runCount returns how many runs the holders have started.
func (r *rig) runCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.rec.Started)
}
