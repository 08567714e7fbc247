package cli_test

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/internal/testkit/proctest"
)

var (
	// loadLine is bench's status line while it writes the monitor's leases.
	loadLine = regexp.MustCompile(`bench: monitor: writing leases in bulk [█░]{20} ([\d,]+)/1,000,000 leases ([\d,]+)/s ([\d.]+)s`)
	// loadedLine is the summary it leaves.
	loadedLine = regexp.MustCompile(`bench: monitor: wrote leases 100,001-1,000,000 in ([\d.]+)s \(([\d,]+)/s\)`)
)

// TestBenchLoadProgressInTmux runs the monitor workload's bulk load of a
// million leases in a real terminal: while it writes (its last 900,000,
// after the steps at 10,000 and 100,000), the status line shows the bar,
// the count of the million, the rate and the time so far, redrawn in place
// (one line on the screen, the count moving); when it ends, a summary line
// says how long it took. Then ctrl+c stops the bench, which removes its
// leases.
func TestBenchLoadProgressInTmux(t *testing.T) {
	db := pgtest.New(t)
	tm := proctest.StartTmux(t, 160, 24, []string{"DATABASE_URL=" + db.URL, "TERM=xterm-256color"},
		builtBinary(t)+" bench --only monitor --monitor-leases 1000000 --duration 1s --warmup 0s; echo leasetop exited $?; sleep 600")
	first := tm.WaitFor("the load's status line with a count under a million", 5*time.Minute, func(s string) bool {
		m := loadLine.FindStringSubmatch(s)
		return m != nil && count(m[1]) > 0 && count(m[1]) < 1_000_000
	})
	m := loadLine.FindStringSubmatch(first)
	t.Logf("status line: %s", m[0])
	later := tm.WaitFor("the count moving on the same line", 5*time.Minute, func(s string) bool {
		n := loadLine.FindStringSubmatch(s)
		return (n != nil && count(n[1]) > count(m[1])) || loadedLine.MatchString(s)
	})
	if n := len(loadLine.FindAllString(later, -1)); n > 1 {
		t.Errorf("%d status lines on the screen, want one redrawn in place:\n%s", n, later)
	}
	done := tm.WaitFor("the load's summary", 10*time.Minute, loadedLine.MatchString)
	t.Logf("summary: %s", loadedLine.FindString(done))
	if loadLine.MatchString(done) {
		t.Errorf("the status line stayed after the load:\n%s", done)
	}
	tm.Keys("C-c")
	tm.WaitFor("bench to stop on ctrl+c", 2*time.Minute, func(s string) bool { return strings.Contains(s, "leasetop exited 130") })
	var left int
	if err := db.Conn(t).QueryRow(context.Background(), `SELECT count(*) FROM lease.session_lease`).Scan(&left); err != nil || left != 0 {
		t.Errorf("after bench stopped, %d leases (%v) are left, want its million removed", left, err)
	}
}

// count reads 1,234,567.
func count(s string) int {
	n, _ := strconv.Atoi(strings.ReplaceAll(s, ",", ""))
	return n
}
