package exporter_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/internal/testkit/proctest"
	"github.com/leasetop/leasetop/internal/testkit/syncbuf"
)

// prometheus is a real Prometheus server started by a test on loopback.
type prometheus struct {
	addr string
	proc *proctest.Process
	log  syncbuf.Buffer
}

// startPrometheus starts Prometheus with a temporary data folder, scraping
// the targets every 250 ms and evaluating docs/alerts.yml every second.
func startPrometheus(t *testing.T, targets ...string) *prometheus {
	t.Helper()
	bin := promBinary(t, "prometheus")
	dir := t.TempDir()
	rules, err := filepath.Abs(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	config := fmt.Sprintf(`global:
  scrape_interval: 250ms
  scrape_timeout: 200ms
  evaluation_interval: 1s
rule_files: [%q]
scrape_configs:
  - job_name: leasetop
    static_configs:
      - targets: %s
`, rules, quotedList(targets))
	cfgFile := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgFile, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	var last string
	for range 5 { // a free port can be taken between picking and binding it
		port := freePort(t)
		p := &prometheus{addr: "127.0.0.1:" + strconv.Itoa(port)}
		cmd := exec.Command(bin, "--config.file="+cfgFile, "--storage.tsdb.path="+filepath.Join(dir, "data"),
			"--web.listen-address="+p.addr, "--log.level=warn")
		cmd.Stdout, cmd.Stderr = &p.log, &p.log
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		p.proc = proctest.Start(t, cmd)
		if p.waitReady(t) {
			t.Cleanup(p.stop)
			return p
		}
		p.stop()
		last = p.log.String()
	}
	t.Fatalf("prometheus did not start: %s", last)
	return nil
}

// quotedList is a YAML flow list of strings.
func quotedList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// waitReady waits until /-/ready answers 200; false if Prometheus exited.
func (p *prometheus) waitReady(t *testing.T) bool {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-p.proc.Done():
			return false
		default:
		}
		resp, err := http.Get("http://" + p.addr + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return true
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("prometheus not ready after 60s: %s", p.log.String())
	return false
}

func (p *prometheus) stop() {
	if p.proc.Exited() {
		return
	}
	_ = p.proc.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.proc.Done():
	case <-time.After(15 * time.Second):
		_ = p.proc.Cmd.Process.Kill()
		<-p.proc.Done()
	}
}

// api GETs an API path and decodes its data field into out.
func (p *prometheus) api(t *testing.T, path string, out any) {
	t.Helper()
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get("http://" + p.addr + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	var body struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("GET %s: decode: %v", path, err)
	}
	if body.Status != "success" {
		t.Fatalf("GET %s: status %q: %s", path, body.Status, body.Error)
	}
	if err := json.Unmarshal(body.Data, out); err != nil {
		t.Fatalf("GET %s: decode data: %v", path, err)
	}
}

// query runs an instant query and returns each result's value by the value
// of label (or "" for a result without it).
func (p *prometheus) query(t *testing.T, q, label string) map[string]float64 {
	t.Helper()
	var data struct {
		Result []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		} `json:"result"`
	}
	p.api(t, "/api/v1/query?query="+url.QueryEscape(q), &data)
	out := map[string]float64{}
	for _, r := range data.Result {
		s, _ := r.Value[1].(string)
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("query %s: value %v: %v", q, r.Value[1], err)
		}
		out[r.Metric[label]] = v
	}
	return out
}

// waitFor polls cond until it holds.
func (p *prometheus) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after 60s waiting for Prometheus: %s; its log: %s", what, p.log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestPrometheusScrapesExporter runs a real Prometheus against the
// exporter: it scrapes it, its answers for the held leases and the
// transitions match the database, the shipped rules load, and a forced
// release fires LeasetopForcedRelease.
func TestPrometheusScrapesExporter(t *testing.T) {
	db := pgtest.New(t)
	pool := db.Pool(t)
	ctx := context.Background()
	exp := startExporter(t, db.URL)
	prom := startPrometheus(t, exp.addr)

	prom.waitFor(t, "a successful scrape of the exporter", func() bool {
		var data struct {
			ActiveTargets []struct {
				Health     string `json:"health"`
				LastScrape string `json:"lastScrape"`
				LastError  string `json:"lastError"`
			} `json:"activeTargets"`
		}
		prom.api(t, "/api/v1/targets", &data)
		return len(data.ActiveTargets) == 1 && data.ActiveTargets[0].Health == "up"
	})
	var rules struct {
		Groups []struct {
			Rules []struct {
				Name   string `json:"name"`
				Health string `json:"health"`
			} `json:"rules"`
		} `json:"groups"`
	}
	prom.api(t, "/api/v1/rules", &rules)
	loaded := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if r.Health == "err" {
				t.Errorf("rule %s: health err in Prometheus", r.Name)
			}
			loaded++
		}
	}
	if want := len(alertNames(t)); loaded != want {
		t.Errorf("Prometheus loaded %d rules from docs/alerts.yml, want its %d", loaded, want)
	}
	// The forced-release counter must be scraped at 0 before it moves, or
	// increase() cannot see the move.
	prom.waitFor(t, "the forced-release counter at 0", func() bool {
		v, ok := prom.query(t, `leasetop_transitions_total{kind="force_released"}`, "kind")["force_released"]
		return ok && v == 0
	})

	for _, s := range []string{
		`SELECT lease.acquire('acme', 'chat-1', gen_random_uuid(), '1 hour', 'prom')`,
		`SELECT lease.acquire('acme', 'chat-2', md5('acme/chat-2')::uuid, '1 hour', 'prom')`,
		`SELECT lease.acquire('globex', 'chat-1', gen_random_uuid(), '1 hour', 'prom')`,
		`SELECT lease.release('acme', 'chat-2', md5('acme/chat-2')::uuid)`,
		`SELECT lease.force_release('globex', 'chat-1', NULL, 'prometheus test')`,
	} {
		if _, err := pool.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	want := waitCounted(t, exp, pool, "the five transitions")
	var held float64
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM lease.session_lease WHERE expires_at > clock_timestamp()`).Scan(&held); err != nil {
		t.Fatal(err)
	}
	prom.waitFor(t, "leasetop_leases_held and leasetop_transitions_total equal to the database", func() bool {
		h := prom.query(t, "leasetop_leases_held", "")
		tr := prom.query(t, "leasetop_transitions_total", "kind")
		if h[""] != held || len(tr) != len(want) {
			return false
		}
		for kind, n := range want {
			if tr[kind] != float64(n) {
				return false
			}
		}
		return true
	})
	prom.waitFor(t, "LeasetopForcedRelease to fire", func() bool {
		var alerts struct {
			Alerts []struct {
				Labels map[string]string `json:"labels"`
				State  string            `json:"state"`
			} `json:"alerts"`
		}
		prom.api(t, "/api/v1/alerts", &alerts)
		for _, a := range alerts.Alerts {
			if a.Labels["alertname"] == "LeasetopForcedRelease" && a.State == "firing" {
				return true
			}
		}
		return false
	})
}
