package exporter_test

import (
	"context"
	"fmt"
	"github.com/leasetop/leasetop/internal/data"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/internal/testkit/proctest"
)

// exporterProc is one `leasetop exporter` process.
type exporterProc struct {
	*proctest.Process
	addr string // host:port it serves on, once known
}

// launch starts `leasetop args...` without DATABASE_URL or PG* variables
// (the tests pass --dsn). The process is killed when the test ends if it
// still runs.
func launch(t *testing.T, args ...string) *exporterProc {
	t.Helper()
	return launchCmd(t, exec.Command(leasetopBin, args...))
}

// launchCmd is launch for a command of the test's own (leasetop started
// through a shell, say).
func launchCmd(t *testing.T, cmd *exec.Cmd) *exporterProc {
	t.Helper()
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "DATABASE_URL=") || strings.HasPrefix(kv, "PG")
	})
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlives the test binary
	return &exporterProc{Process: proctest.Start(t, cmd)}
}

var servingLine = regexp.MustCompile(`exporter serving http://([^/\s]+)/metrics`)

// startExporter starts `leasetop exporter --listen 127.0.0.1:0 --dsn dsn
// args...` and waits until it serves.
func startExporter(t *testing.T, dsn string, args ...string) *exporterProc {
	t.Helper()
	return waitServing(t, launch(t, append([]string{"exporter", "--listen", "127.0.0.1:0", "--dsn", dsn}, args...)...))
}

// waitServing waits until p serves and records its address.
func waitServing(t *testing.T, p *exporterProc) *exporterProc {
	t.Helper()
	pgtest.Eventually(t, 30*time.Second, "the exporter to serve", func() bool {
		if m := servingLine.FindStringSubmatch(p.Stderr.String()); m != nil {
			p.addr = m[1]
			return true
		}
		if p.Exited() {
			t.Fatalf("exporter exited with %d before serving: %s", p.Code(), p.Stderr.String())
		}
		return false
	})
	return p
}

// get fetches path from the exporter and returns the status and body.
func (p *exporterProc) get(t *testing.T, path string) (int, string) {
	t.Helper()
	code, body, err := httpGet("http://" + p.addr + path)
	if err != nil {
		t.Fatalf("GET %s: %v (exporter stderr: %s)", path, err, p.Stderr.String())
	}
	return code, body
}

// httpGet fetches url and returns the status and body.
func httpGet(url string) (int, string, error) {
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, "", fmt.Errorf("read body: %w", err)
	}
	return resp.StatusCode, string(b), nil
}

// metricSet is one scrape: every sample by its series name, written as
// name{label="value",...} with the labels sorted.
type metricSet map[string]float64

// metrics scrapes /metrics, failing t unless it answers 200 with valid text.
func (p *exporterProc) metrics(t *testing.T) metricSet {
	t.Helper()
	code, body := p.get(t, "/metrics")
	if code != http.StatusOK {
		t.Fatalf("GET /metrics = %d, want 200: %s", code, body)
	}
	return parseMetrics(t, body)
}

func parseMetrics(t *testing.T, body string) metricSet {
	t.Helper()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse /metrics: %v\n%s", err, body)
	}
	out := metricSet{}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			labels := labelString(m.GetLabel())
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				out[name+labels] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[name+labels] = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				out[name+"_count"+labels] = float64(m.GetHistogram().GetSampleCount())
				out[name+"_sum"+labels] = m.GetHistogram().GetSampleSum()
			case dto.MetricType_UNTYPED:
				out[name+labels] = m.GetUntyped().GetValue()
			}
		}
	}
	return out
}

func labelString(ls []*dto.LabelPair) string {
	if len(ls) == 0 {
		return ""
	}
	parts := make([]string, 0, len(ls))
	for _, l := range ls {
		parts = append(parts, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
	}
	slices.Sort(parts)
	return "{" + strings.Join(parts, ",") + "}"
}

// waitMetrics scrapes until cond holds, and returns that scrape.
func (p *exporterProc) waitMetrics(t *testing.T, timeout time.Duration, what string, cond func(metricSet) bool) metricSet {
	t.Helper()
	var m metricSet
	deadline := time.Now().Add(timeout)
	for {
		m = p.metrics(t)
		if cond(m) {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s; last scrape:\n%s\nexporter stderr: %s", timeout, what, m.leasetop(), p.Stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// leasetop returns the leasetop_ samples, one per line, for failure
// messages.
func (m metricSet) leasetop() string {
	var lines []string
	for k, v := range m {
		if strings.HasPrefix(k, "leasetop_") {
			lines = append(lines, fmt.Sprintf("%s %g", k, v))
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// transitions returns leasetop_transitions_total by kind.
func (m metricSet) transitions() map[string]int64 {
	out := map[string]int64{}
	for k, v := range m {
		if kind, ok := strings.CutPrefix(k, `leasetop_transitions_total{kind="`); ok {
			out[strings.TrimSuffix(kind, `"}`)] = int64(v)
		}
	}
	return out
}

// dbTransitions returns SELECT kind, count(*) FROM lease.event, with every
// kind the exporter counts present (0 when absent).
func dbTransitions(t *testing.T, pool *pgxpool.Pool) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, k := range data.Kinds() {
		out[string(k)] = 0
	}
	rows, err := pool.Query(context.Background(), `SELECT kind, count(*) FROM lease.event GROUP BY kind`)
	if err != nil {
		t.Fatalf("count events: %v", err)
	}
	defer rows.Close()
	for rows.Next() {
		var k string
		var n int64
		if err := rows.Scan(&k, &n); err != nil {
			t.Fatalf("count events: %v", err)
		}
		out[k] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("count events: %v", err)
	}
	return out
}
