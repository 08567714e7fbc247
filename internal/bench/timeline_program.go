package bench

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
	"github.com/leasetop/leasetop/ui"
)

// timelineProgram is the monitor's program as ui.Run runs it (see
// startMonitor), with a keyboard: keys written to its input are read and
// parsed by Bubble Tea as a terminal's. A probe waits for the first frame
// whose timeline satisfies a condition.
type timelineProgram struct {
	*monitorProgram
	keys  io.Writer
	model *probedModel
}

func startTimelineMonitor(ctx context.Context, store *data.Store) (*timelineProgram, error) {
	var model *probedModel
	mp, keys, err := runMonitor(ctx, store, monitor.FeedConfig{}, func(t *timedModel) tea.Model {
		model = &probedModel{timedModel: t}
		return model
	})
	if err != nil {
		return nil, err
	}
	return &timelineProgram{monitorProgram: mp, keys: keys, model: model}, nil
}

// press types key and waits, up to timeout, for the first frame whose
// timeline satisfies ok. It returns the time from the key to that frame,
// where that time went, and the timeline's status then.
func (tp *timelineProgram) press(ctx context.Context, key string, ok func(ui.TimelineStatus) bool, timeout time.Duration) (probeResult, error) {
	pr := &probe{ok: ok, done: make(chan probeResult, 1)}
	tp.model.mu.Lock()
	tp.model.probe = pr
	pr.t0 = time.Now()
	tp.model.mu.Unlock()
	if _, err := io.WriteString(tp.keys, key); err != nil {
		return probeResult{}, fmt.Errorf("type %q: %w", key, err)
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case res := <-pr.done:
		if res.st.Err != nil {
			return res, fmt.Errorf("the timeline's read failed: %w", res.st.Err)
		}
		return res, nil
	case err := <-tp.done:
		tp.done <- err
		return probeResult{}, fmt.Errorf("monitor stopped: %v", err)
	case <-t.C:
		return probeResult{}, fmt.Errorf("no frame within %v of %q showed what it should", timeout, key)
	case <-ctx.Done():
		return probeResult{}, ctx.Err()
	}
}

// typeKeys writes keys without waiting for anything.
func (tp *timelineProgram) typeKeys(keys string) error {
	_, err := io.WriteString(tp.keys, keys)
	return err
}

type probe struct {
	t0   time.Time
	ok   func(ui.TimelineStatus) bool
	done chan probeResult // buffered: one send
	// Where the step's time went, from t0 (the program's goroutine only
	// touches these, before done's send).
	keyAt, answerAt time.Duration
}

type probeResult struct {
	d  time.Duration
	st ui.TimelineStatus
	// keyAt is when the program's goroutine took the key (Update), after
	// the messages queued before it; answerAt when the last read's answer
	// (the history or who held the lanes) reached Update: zero when the
	// step read nothing.
	keyAt, answerAt time.Duration
}

// saw notes a message the program's goroutine takes at t while the probe
// waits.
func (pr *probe) saw(msg tea.Msg, t time.Time) {
	switch msg.(type) {
	case tea.KeyPressMsg:
		if pr.keyAt == 0 {
			pr.keyAt = t.Sub(pr.t0)
		}
		return
	}
	if pr.keyAt == 0 {
		return
	}
	switch fmt.Sprintf("%T", msg) { // the reads' answers, unexported in ui
	case "ui.timelineMsg", "ui.ownersMsg":
		pr.answerAt = t.Sub(pr.t0)
	}
}

// probedModel is timedModel, and after each View checks the pending probe
// (a failed read satisfies every probe, to be reported).
type probedModel struct {
	*timedModel
	mu    sync.Mutex
	probe *probe
}

func (p *probedModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	p.mu.Lock()
	if pr := p.probe; pr != nil {
		pr.saw(msg, time.Now())
	}
	p.mu.Unlock()
	_, cmd := p.timedModel.Update(msg)
	return p, cmd
}

func (p *probedModel) View() tea.View {
	v := p.timedModel.View()
	p.mu.Lock()
	defer p.mu.Unlock()
	if pr := p.probe; pr != nil {
		if st := p.m.Timeline(); st.Err != nil || pr.ok(st) {
			pr.done <- probeResult{d: time.Since(pr.t0), st: st, keyAt: pr.keyAt, answerAt: pr.answerAt}
			p.probe = nil
		}
	}
	return v
}

// readTimer times the timeline's database reads on a store (its tracer):
// the statements of data.EventsBetween, and the pipelines of data.Replay
// and data.OwnersAt (each one round trip), which read lease.event under
// the alias e (the feed's reads do not).
type readTimer struct {
	total atomic.Int64 // nanoseconds
	n     atomic.Int64
}

type readStart struct{}

func isTimelineRead(sql string) bool {
	return strings.Contains(sql, "FROM lease.event e") || strings.Contains(sql, "min(at) FROM lease.event")
}

func (t *readTimer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if isTimelineRead(d.SQL) {
		return context.WithValue(ctx, readStart{}, time.Now())
	}
	return ctx
}

func (t *readTimer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryEndData) {
	if t0, ok := ctx.Value(readStart{}).(time.Time); ok {
		t.total.Add(int64(time.Since(t0)))
		t.n.Add(1)
	}
}

func (t *readTimer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceBatchStartData) context.Context {
	if d.Batch == nil {
		return ctx
	}
	for _, q := range d.Batch.QueuedQueries {
		if isTimelineRead(q.SQL) {
			return context.WithValue(ctx, readStart{}, time.Now())
		}
	}
	return ctx
}

func (t *readTimer) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

func (t *readTimer) TraceBatchEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchEndData) {
	t.TraceQueryEnd(ctx, nil, pgx.TraceQueryEndData{})
}

// spent is the reads' total time so far.
func (t *readTimer) spent() time.Duration { return time.Duration(t.total.Load()) }
