package progress_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/progress"
	"github.com/leasetop/leasetop/internal/testkit/syncbuf"
)

// clock is a settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Set(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = time.Date(2026, 12, 8, 0, 30, 0, 0, time.UTC).Add(d)
}

// TestPlainLines: off a terminal, a task shows nothing in its first 2 s,
// then a line with the count, the rate and the time so far at most every
// 5 s, and its summary at the end.
func TestPlainLines(t *testing.T) {
	var out syncbuf.Buffer
	c := &clock{}
	c.Set(0)
	m := progress.New(&out, progress.Options{Prefix: "bench: ", Now: c.Now})
	m.Start("monitor: writing leases", 1_000_000, "leases")
	for _, step := range []struct {
		at   time.Duration
		done int64
	}{{time.Second, 100_000}, {3 * time.Second, 300_000}, {4 * time.Second, 400_000}, {9 * time.Second, 900_000}} {
		c.Set(step.at)
		m.Set(step.done)
	}
	m.Done("monitor: wrote 1,000,000 leases in 10.0s")
	want := "bench: monitor: writing leases: 300,000 of 1,000,000 leases 100,000/s 3.0s\n" +
		"bench: monitor: writing leases: 900,000 of 1,000,000 leases 100,000/s 9.0s\n" +
		"bench: monitor: wrote 1,000,000 leases in 10.0s\n"
	if got := out.String(); got != want {
		t.Errorf("plain lines:\n%s\nwant:\n%s", got, want)
	}
}

// TestResumedRate: a task that resumes a count (a load that grows an
// earlier one's rows) reports the rate of what it did, not of what was done
// before it.
func TestResumedRate(t *testing.T) {
	var out syncbuf.Buffer
	c := &clock{}
	c.Set(0)
	m := progress.New(&out, progress.Options{Now: c.Now})
	m.Start("writing leases", 1_000_000, "leases")
	m.Resume(100_000)
	c.Set(3 * time.Second)
	m.Set(160_000)
	m.Done("")
	if got, want := out.String(), "writing leases: 160,000 of 1,000,000 leases 20,000/s 3.0s\n"; got != want {
		t.Errorf("line %q, want %q", got, want)
	}
}

// TestQuickTaskShowsNothing: work that ends within the delay prints only
// its summary, and none without one.
func TestQuickTaskShowsNothing(t *testing.T) {
	for _, terminal := range []bool{false, true} {
		var out syncbuf.Buffer
		c := &clock{}
		c.Set(0)
		m := progress.New(&out, progress.Options{Terminal: terminal, Every: time.Millisecond, Now: c.Now})
		m.Start("maintain", 0, "")
		m.Step("lease.maintain_events")
		c.Set(500 * time.Millisecond)
		m.Set(3)
		time.Sleep(20 * time.Millisecond) // let the terminal's redraw tick run: it must draw nothing yet
		m.Done("")
		if got := out.String(); got != "" {
			t.Errorf("terminal %v: a quick task printed %q, want nothing", terminal, got)
		}
	}
}

// TestTerminalLine: on a terminal the status line is redrawn in place
// (carriage return, erase line) with the bar, the count, the rate and the
// time, in colour unless NO_COLOR; Done erases it.
func TestTerminalLine(t *testing.T) {
	for _, tt := range []struct {
		name    string
		noColor bool
	}{
		{"colour", false},
		{"NO_COLOR", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out syncbuf.Buffer
			c := &clock{}
			c.Set(0)
			m := progress.New(&out, progress.Options{Terminal: true, Environ: []string{"TERM=xterm-256color", "CLICOLOR_FORCE=1"}, NoColor: tt.noColor, Prefix: "bench: ", Every: time.Millisecond, Now: c.Now})
			m.Start("writing leases", 1000, "leases")
			c.Set(2 * time.Second)
			m.Set(500)
			deadline := time.Now().Add(10 * time.Second)
			for !strings.Contains(out.String(), "500/1,000 leases 250/s 2.0s") {
				if time.Now().After(deadline) {
					t.Fatalf("no status line with the count, rate and time within 10 s: %q", out.String())
				}
				time.Sleep(time.Millisecond) // polling the buffer the redraw goroutine writes
			}
			m.Done("")
			got := out.String()
			if !strings.HasPrefix(got, "\r\x1b[2Kbench: writing leases ") || !strings.HasSuffix(got, "\r\x1b[2K") {
				t.Errorf("output %q: want lines drawn in place and erased at the end", got)
			}
			if !strings.Contains(got, "█") || !strings.Contains(got, "░") {
				t.Errorf("output %q: want a bar of █ and ░", got)
			}
			if hasColour := strings.Contains(got, "\x1b[38;"); hasColour == tt.noColor {
				t.Errorf("output %q: colour %v, want %v", got, hasColour, !tt.noColor)
			}
		})
	}
}

func TestCount(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1_000_000: "1,000,000", -12345: "-12,345"} {
		if got := progress.Count(n); got != want {
			t.Errorf("Count(%d) = %q, want %q", n, got, want)
		}
	}
}
