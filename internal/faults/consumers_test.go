package faults_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/monitor"
	"github.com/leasetop/leasetop/ui"
)

// consumers are the three consumers of the monitor's feed, each a separate
// client of the database: `leasetop events --follow --json` (a process),
// the monitor's program with its events pane (ui.NewProgram, drawing
// nowhere) and `leasetop exporter` (a process). Each must apply every
// lease.event row exactly once, whatever happens to its connections.
type consumers struct {
	r        *rig
	follower *follower
	screen   *screen
	exporter *exporterProc
}

// consumerDSN says how the consumers reach the database: dsn for every
// query, listen for LISTEN (empty: the same), poll for poll mode.
type consumerDSN struct {
	dsn, listen string
	poll        bool
}

// args are the command-line flags for dsn.
func (c consumerDSN) args() []string {
	a := []string{"--dsn", c.dsn}
	if c.listen != "" {
		a = append(a, "--listen-dsn", c.listen)
	}
	if c.poll {
		a = append(a, "--poll", "250ms")
	}
	return a
}

// options are the data.Options for dsn.
func (c consumerDSN) options() data.Options {
	o := data.Options{ListenDSN: c.listen}
	if c.poll {
		o.Poll = 250 * time.Millisecond
	}
	return o
}

// linked reports whether a consumer's listener state is the one it has
// when all is well: LIVE, or POLL in poll mode.
func (c consumerDSN) linked(s data.ListenerStatus) bool {
	if c.poll {
		return s == data.ListenerPolling
	}
	return s == data.ListenerLive
}

// startConsumers starts the three consumers on the rig's database, which
// must hold no event yet (the exporter counts only what happens after its
// start), and waits until each follows it.
func (r *rig) startConsumers(c consumerDSN) *consumers {
	r.t.Helper()
	if n := r.lastEventID(); n != 0 {
		r.t.Fatalf("the database already has events (up to %d): the consumers must start before any", n)
	}
	cs := &consumers{r: r, follower: r.startFollower(c), screen: r.startScreen(c), exporter: r.startExporter(c)}
	ready := "LIVE"
	if c.poll {
		ready = "POLL"
	}
	pgtest.Eventually(r.t, 30*time.Second, "the consumers to follow the database ("+ready+")", func() bool {
		return cs.follower.linked(c) && cs.screen.linked(c) && cs.exporter.linked(r.t, c)
	})
	return cs
}

// caughtUp waits until every consumer has applied every event lease.event
// holds now, and returns how long each took from since.
func (cs *consumers) caughtUp(since time.Time) (follower, screen, exporter time.Duration) {
	t := cs.r.t
	t.Helper()
	ids := cs.r.eventIDs(0)
	kinds := cs.r.eventKinds()
	deadline := time.Now().Add(60 * time.Second)
	for follower == 0 || screen == 0 || exporter == 0 {
		if follower == 0 && cs.follower.printedAll(ids) {
			follower = time.Since(since)
		}
		if screen == 0 && cs.screen.shownAll(ids) {
			screen = time.Since(since)
		}
		if exporter == 0 && cs.exporter.countedAll(t, kinds) {
			exporter = time.Since(since)
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 60s, of the %d events: events --follow printed %v (stderr %q); the events pane showed all: %v; "+
				"the exporter counted %v of %v (stderr %q)", len(ids), cs.follower.ids(), cs.follower.Stderr.String(),
				screen != 0, cs.exporter.transitions(t), kinds, cs.exporter.Stderr.String())
		}
		time.Sleep(10 * time.Millisecond) // polling the consumers until the deadline
	}
	return follower, screen, exporter
}

// check asserts that each consumer applied every lease.event row exactly
// once: the follower printed each id once and no other, the events pane
// showed each id and never one twice, and the exporter's transition counts
// equal lease.event's, kind by kind.
func (cs *consumers) check() {
	t := cs.r.t
	t.Helper()
	ids := cs.r.eventIDs(0)
	printed := cs.follower.ids()
	counts := map[int64]int{}
	for _, id := range printed {
		counts[id]++
	}
	for _, id := range ids {
		if counts[id] != 1 {
			t.Errorf("events --follow printed event %d %d times, want once", id, counts[id])
		}
		delete(counts, id)
	}
	for id, n := range counts {
		t.Errorf("events --follow printed event %d (%d times), which lease.event does not hold", id, n)
	}
	cs.screen.check(t, ids)
	want := cs.r.eventKinds()
	if got := cs.exporter.transitions(t); !maps.Equal(got, want) {
		t.Errorf("leasetop_transitions_total = %v, want %v (SELECT kind, count(*) FROM lease.event)", got, want)
	}
}

// eventKinds is SELECT kind, count(*) FROM lease.event.
func (r *rig) eventKinds() map[string]int64 {
	r.t.Helper()
	out := map[string]int64{}
	for _, ev := range r.events() {
		out[string(ev.Kind)]++
	}
	return out
}

// follower is a `leasetop events --follow --json` process.
type follower struct{ *proc }

// startFollower starts `leasetop events --follow --json --since 0`.
func (r *rig) startFollower(c consumerDSN) *follower {
	r.t.Helper()
	cmd := exec.Command(leasetopBin, append([]string{"events", "--follow", "--json", "--since", "0"}, c.args()...)...)
	return &follower{startProc(r.t, cmd)}
}

// linked reports whether the follower's last word on stderr says it
// follows live (or polls, in poll mode).
func (f *follower) linked(c consumerDSN) bool {
	lines := strings.Split(strings.TrimSpace(f.Stderr.String()), "\n")
	last := lines[len(lines)-1]
	if c.poll {
		return strings.HasPrefix(last, "leasetop: polling")
	}
	return last == "leasetop: following events live"
}

// ids returns the ids it printed, in order.
func (f *follower) ids() []int64 {
	var out []int64
	sc := bufio.NewScanner(strings.NewReader(f.Stdout.String()))
	for sc.Scan() {
		var ev struct {
			ID int64 `json:"id"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) == nil {
			out = append(out, ev.ID)
		}
	}
	return out
}

// printedAll reports whether it printed every id in ids.
func (f *follower) printedAll(ids []int64) bool {
	got := f.ids()
	for _, id := range ids {
		if !slices.Contains(got, id) {
			return false
		}
	}
	return true
}

// screen is the monitor's program, as `leasetop watch` runs it, on a
// 200x60 window drawn nowhere. After every message it notes what the
// events pane holds: the monitor's state's event log.
type screen struct {
	mu                sync.Mutex
	m                 *ui.Model
	shown             map[int64]bool // every id the events pane has held
	twice             []int64        // ids the pane held twice at once
	link              data.ListenerStatus
	applied, baseline int64
}

// startScreen runs the monitor's program on its own store until the test
// ends.
func (r *rig) startScreen(c consumerDSN) *screen {
	r.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	in, inW := io.Pipe()
	p, err := ui.NewProgram(ctx, ui.Options{
		Store: pgtest.OpenStore(r.t, c.dsn, c.options()), Input: in, Output: io.Discard,
		Environ: []string{"TERM=xterm-256color"},
	})
	if err != nil {
		cancel()
		r.t.Fatalf("ui.NewProgram: %v", err)
	}
	s := &screen{m: p.Model(), shown: map[int64]bool{}}
	var wg sync.WaitGroup
	wg.Go(func() {
		_ = p.Run(ctx, s, tea.WithWindowSize(200, 60), tea.WithoutSignalHandler())
		_ = inW.Close()
	})
	r.t.Cleanup(func() { cancel(); wg.Wait() })
	return s
}

func (s *screen) Init() tea.Cmd { return s.m.Init() }

// Update hands msg to the monitor's model and notes its events pane.
func (s *screen) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	_, cmd := s.m.Update(msg)
	st := s.m.State()
	s.mu.Lock()
	defer s.mu.Unlock()
	now := map[int64]bool{}
	for _, ev := range st.Events() {
		if now[ev.ID] {
			s.twice = append(s.twice, ev.ID)
		}
		now[ev.ID] = true
		s.shown[ev.ID] = true
	}
	s.link = stateLink(st)
	s.applied, s.baseline = st.Applied(), st.Baseline()
	return s, cmd
}

func (s *screen) View() tea.View { return s.m.View() }

// stateLink is the listener status behind st's header.
func stateLink(st *monitor.State) data.ListenerStatus {
	switch st.Health(time.Now()).Link {
	case monitor.LinkLive:
		return data.ListenerLive
	case monitor.LinkPoll:
		return data.ListenerPolling
	default:
		return data.ListenerReconnecting
	}
}

func (s *screen) linked(c consumerDSN) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return c.linked(s.link)
}

func (s *screen) shownAll(ids []int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		if !s.shown[id] {
			return false
		}
	}
	return true
}

// check asserts the events pane showed every id of ids and held none twice,
// and that its state applied exactly len(ids) events.
func (s *screen) check(t *testing.T, ids []int64) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		if !s.shown[id] {
			t.Errorf("the monitor's events pane never showed event %d", id)
		}
	}
	if len(s.twice) > 0 {
		t.Errorf("the monitor's events pane held events %v twice", s.twice)
	}
	if s.baseline != 0 || s.applied != int64(len(ids)) {
		t.Errorf("the monitor applied %d events after %d, want the %d lease.event holds", s.applied, s.baseline, len(ids))
	}
}

// exporterProc is a `leasetop exporter` process.
type exporterProc struct {
	*proc
	addr string
}

var servingLine = regexp.MustCompile(`exporter serving http://([^/\s]+)/metrics`)

// startExporter starts `leasetop exporter --listen 127.0.0.1:0` and waits
// until it serves.
func (r *rig) startExporter(c consumerDSN) *exporterProc {
	r.t.Helper()
	e := &exporterProc{proc: startProc(r.t, exec.Command(leasetopBin,
		append([]string{"exporter", "--listen", "127.0.0.1:0"}, c.args()...)...))}
	pgtest.Eventually(r.t, 30*time.Second, "the exporter to serve", func() bool {
		if m := servingLine.FindStringSubmatch(e.Stderr.String()); m != nil {
			e.addr = m[1]
			return true
		}
		return false
	})
	return e
}

var sampleLine = regexp.MustCompile(`(?m)^(leasetop_[a-z_]+)(\{[^}]*\})? ([0-9.e+-]+)$`)

// metrics scrapes /metrics: every leasetop_ sample by name{labels}.
func (e *exporterProc) metrics(t *testing.T) map[string]float64 {
	t.Helper()
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get("http://" + e.addr + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics: %v (exporter stderr: %s)", err, e.Stderr.String())
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics = %d, %v", resp.StatusCode, err)
	}
	out := map[string]float64{}
	for _, m := range sampleLine.FindAllStringSubmatch(string(body), -1) {
		v, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			t.Fatalf("metric %s: %v", m[0], err)
		}
		out[m[1]+m[2]] = v
	}
	return out
}

func (e *exporterProc) linked(t *testing.T, c consumerDSN) bool {
	state := "live"
	if c.poll {
		state = "poll"
	}
	m := e.metrics(t)
	return m[`leasetop_feed_state{state="`+state+`"}`] == 1 && m["leasetop_resyncs_total"] >= 1
}

// transitions returns leasetop_transitions_total by kind, without the kinds
// at 0.
func (e *exporterProc) transitions(t *testing.T) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for k, v := range e.metrics(t) {
		if kind, ok := strings.CutPrefix(k, `leasetop_transitions_total{kind="`); ok && v != 0 {
			out[strings.TrimSuffix(kind, `"}`)] = int64(v)
		}
	}
	return out
}

// countedAll reports whether the exporter has counted at least as many
// transitions of each kind as want.
func (e *exporterProc) countedAll(t *testing.T, want map[string]int64) bool {
	got := e.transitions(t)
	for k, n := range want {
		if got[k] < n {
			return false
		}
	}
	return true
}
