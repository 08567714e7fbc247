// Package progress shows how long work advances, on the command's stderr:
// on a terminal a status line redrawn in place (bubbles' progress bar when
// the total is known, the count, the rate, the time so far); elsewhere (a
// pipe, a log, cron) plain lines, one every few seconds. Work that ends
// within a second or two shows nothing: the line is for what makes a user
// wonder whether anything is happening. Nothing goes to stdout, so a
// command's --json output stays exactly its JSON.
package progress

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"charm.land/bubbles/v2/progress"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/colorprofile"
)

// Options configure a Meter. Zero fields take the documented defaults.
type Options struct {
	// Terminal says the writer is a terminal: the status line is redrawn in
	// place. Otherwise the Meter writes plain lines.
	Terminal bool
	// Environ decides the terminal's colours (TERM, COLORTERM), as for the
	// monitor. Default: none, which leaves the bar without colour.
	Environ []string
	// NoColor turns colours off (the NO_COLOR convention), whatever
	// Environ says.
	NoColor bool
	// Prefix starts every line ("bench: ").
	Prefix string
	// Delay is how long a task runs before it shows. Default 1 s on a
	// terminal, 2 s in plain lines.
	Delay time.Duration
	// Every is how often the status line is redrawn. Default 200 ms on a
	// terminal, 5 s in plain lines.
	Every time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Meter shows one task at a time. It is safe for concurrent use: a task's
// counts may come from another goroutine (a watcher of the server) than
// the one that started it.
type Meter struct {
	w   io.Writer
	opt Options
	bar progress.Model
	// colours is what the terminal shows of the bar's colours (none with
	// NO_COLOR): its glyphs say the same.
	colours colorprofile.Profile

	mu     sync.Mutex
	task   string // what is being done
	unit   string // what is counted
	detail string // the task's current step, when it says
	total  int64  // 0: unknown
	done   int64
	start  time.Time
	shown  time.Time // when the line was last drawn or printed
	drawn  bool      // a status line is on the terminal now
	rateAt time.Time // the last count's time and value, for the rate
	rateN  int64
	rate   float64 // per second, smoothed

	life    sync.Mutex    // serialises Start and Done
	stop    chan struct{} // ends the redraw goroutine (on a terminal)
	stopped sync.WaitGroup
}

// New returns a Meter writing to w.
func New(w io.Writer, opt Options) *Meter {
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Delay <= 0 {
		opt.Delay = 2 * time.Second
		if opt.Terminal {
			opt.Delay = time.Second
		}
	}
	if opt.Every <= 0 {
		opt.Every = 5 * time.Second
		if opt.Terminal {
			opt.Every = 200 * time.Millisecond
		}
	}
	colours := colorprofile.Detect(w, opt.Environ)
	if opt.NoColor {
		colours = min(colours, colorprofile.ASCII)
	}
	return &Meter{w: w, opt: opt, colours: colours,
		bar: progress.New(progress.WithWidth(20), progress.WithoutPercentage(),
			progress.WithFillCharacters('█', '░'), progress.WithColors(lipgloss.Color("#3fb950")))}
}

// Start begins a task: what it does, how many units it will count (0 when
// unknown: the line shows the time so far) and what a unit is ("leases").
// A task still running is ended first. On a terminal a goroutine redraws the
// line until Done.
func (m *Meter) Start(task string, total int64, unit string) {
	m.Done("")
	m.life.Lock()
	defer m.life.Unlock()
	now := m.opt.Now()
	m.mu.Lock()
	m.task, m.total, m.unit, m.detail = task, total, unit, ""
	m.done, m.start, m.shown, m.drawn = 0, now, time.Time{}, false
	m.rateAt, m.rateN, m.rate = now, 0, 0
	m.mu.Unlock()
	if m.opt.Terminal {
		m.stop = make(chan struct{})
		m.stopped.Go(func() { m.redraw(m.stop) })
	}
}

// Set records how many units are done.
func (m *Meter) Set(done int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.task == "" {
		return
	}
	now := m.opt.Now()
	if dt := now.Sub(m.rateAt).Seconds(); dt > 0 && done > m.rateN {
		r := float64(done-m.rateN) / dt
		if m.rate == 0 {
			m.rate = r
		} else {
			m.rate = 0.7*m.rate + 0.3*r
		}
		m.rateAt, m.rateN = now, done
	}
	m.done = done
	if !m.opt.Terminal {
		m.printLocked(now)
	}
}

// Resume says the task's count starts at done (units done before the
// task began: a load that grows what an earlier one wrote), so that the rate
// counts from there.
func (m *Meter) Resume(done int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.done, m.rateN = done, done
}

// Measure records a count whose total or unit may change as the task goes
// from phase to phase (an index build's blocks, then its tuples): a new
// total or unit starts the rate again. A total of 0 shows no count.
func (m *Meter) Measure(done, total int64, unit string) {
	m.mu.Lock()
	if m.task != "" && (total != m.total || unit != m.unit) {
		m.total, m.unit = total, unit
		m.done, m.rateAt, m.rateN, m.rate = 0, m.opt.Now(), done, 0
	}
	m.mu.Unlock()
	m.Set(done)
}

// Step says what the task is doing now (a file, a wait), without a count.
func (m *Meter) Step(detail string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.task == "" {
		return
	}
	m.detail = detail
	if !m.opt.Terminal {
		m.printLocked(m.opt.Now())
	}
}

// Done ends the task: it clears the status line and, when summary is not
// empty, prints it as a line of its own ("wrote 1,000,000 leases in 58s").
func (m *Meter) Done(summary string) {
	m.life.Lock()
	defer m.life.Unlock()
	if m.stop != nil {
		close(m.stop)
		m.stopped.Wait()
		m.stop = nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.drawn {
		io.WriteString(m.w, "\r\x1b[2K") //nolint:errcheck // a status line; nothing to do if stderr is gone
		m.drawn = false
	}
	if summary != "" && m.task != "" {
		fmt.Fprintln(m.w, m.opt.Prefix+summary)
	}
	m.task = ""
}

// Elapsed is how long the current task has run.
func (m *Meter) Elapsed() time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.opt.Now().Sub(m.start)
}

// redraw draws the status line every opt.Every until stop closes.
func (m *Meter) redraw(stop <-chan struct{}) {
	t := time.NewTicker(m.opt.Every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			m.mu.Lock()
			now := m.opt.Now()
			if now.Sub(m.start) >= m.opt.Delay {
				io.WriteString(m.w, "\r\x1b[2K"+m.lineLocked(now, true)) //nolint:errcheck // as in Done
				m.drawn = true
			}
			m.mu.Unlock()
		}
	}
}

// printLocked prints a plain line when the task has run long enough and the
// last line is old enough.
func (m *Meter) printLocked(now time.Time) {
	if now.Sub(m.start) < m.opt.Delay || (!m.shown.IsZero() && now.Sub(m.shown) < m.opt.Every) {
		return
	}
	fmt.Fprintln(m.w, m.lineLocked(now, false))
	m.shown = now
}

// lineLocked is the status: "bench: writing leases ████░░ 412,000/1,000,000
// leases 61,200/s 6.7s" on a terminal, the same in words in plain lines.
func (m *Meter) lineLocked(now time.Time, bar bool) string {
	var b strings.Builder
	b.WriteString(m.opt.Prefix + m.task)
	if m.detail != "" {
		b.WriteString(": " + m.detail)
	}
	switch {
	case m.total > 0 && bar:
		b.WriteString(" " + m.barLocked())
		fmt.Fprintf(&b, " %s/%s %s", Count(m.done), Count(m.total), m.unit)
	case m.total > 0:
		fmt.Fprintf(&b, ": %s of %s %s", Count(m.done), Count(m.total), m.unit)
	case m.done > 0:
		fmt.Fprintf(&b, ": %s %s", Count(m.done), m.unit)
	}
	if m.rate > 0 {
		fmt.Fprintf(&b, " %s/s", Count(int64(m.rate)))
	}
	fmt.Fprintf(&b, " %s", Seconds(now.Sub(m.start)))
	return b.String()
}

// barLocked is the progress bar in the terminal's colours.
func (m *Meter) barLocked() string {
	var b strings.Builder
	w := colorprofile.Writer{Forward: &b, Profile: m.colours}
	_, _ = w.WriteString(m.bar.ViewAs(min(float64(m.done)/float64(m.total), 1)))
	return b.String()
}

// Count writes n with thousands separators: 1,000,000.
func Count(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// Seconds writes d as seconds with one decimal: 6.7s.
func Seconds(d time.Duration) string { return fmt.Sprintf("%.1fs", d.Seconds()) }
