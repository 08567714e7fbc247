package exporter_test

import (
	"syscall"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestExporterCleanStop: SIGTERM, a daemon's normal stop, ends a real
// exporter process with exit 0 and not one more line on stderr: no "feed
// down, still retrying" for the feed it stopped itself. Listening and
// polling alike.
func TestExporterCleanStop(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	for _, tc := range []struct {
		name  string
		args  []string
		state string
	}{
		{"live", nil, "live"},
		{"poll", []string{"--poll", "50ms"}, "poll"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := startExporter(t, db.URL, tc.args...)
			p.waitMetrics(t, 30*time.Second, "the feed to be "+tc.state, func(m metricSet) bool {
				return m[`leasetop_feed_state{state="`+tc.state+`"}`] == 1 && m["leasetop_resyncs_total"] >= 1
			})
			before := p.Stderr.String()
			if err := p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if code := p.Wait(t, 30*time.Second); code != 0 {
				t.Errorf("exporter after SIGTERM: exit %d, want 0; stderr %q", code, p.Stderr.String())
			}
			if after := p.Stderr.String()[len(before):]; after != "" {
				t.Errorf("stderr after SIGTERM = %q, want nothing (before it: %q)", after, before)
			}
		})
	}
}
