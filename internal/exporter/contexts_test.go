package exporter_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// One exporter of two databases on two servers, scraped by a real
// Prometheus: each series carries its database's context label, each
// context's held leases and transitions are its database's, and a context
// whose server stops is exported as down while the other's gauges go on
// following its database.
func TestPrometheusScrapesContexts(t *testing.T) {
	ctx := context.Background()
	eu := pgtest.New(t)
	usSrv, us := pgtest.OtherServer(t, "us_app")
	cfg := filepath.Join(t.TempDir(), "config.toml")
	text := fmt.Sprintf("[contexts.eu]\ndsn = %q\n\n[contexts.us]\ndsn = %q\nmode = \"read-only\"\n", eu.URL, us.URL)
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	euPool, usPool := eu.Pool(t), us.Pool(t)
	exp := waitServing(t, launch(t, "exporter", "--listen", "127.0.0.1:0", "--config", cfg, "--context", "all"))
	prom := startPrometheus(t, exp.addr)
	prom.waitFor(t, "both contexts live", func() bool {
		q := prom.query(t, `leasetop_feed_state{state="live"}`, "context")
		return q["eu"] == 1 && q["us"] == 1
	})

	for _, s := range []string{
		`SELECT lease.acquire('acme', 'chat-1', gen_random_uuid(), '1 hour', 'eu')`,
		`SELECT lease.acquire('acme', 'chat-2', gen_random_uuid(), '1 hour', 'eu')`,
	} {
		if _, err := euPool.Exec(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range []string{
		`SELECT lease.acquire('acme', 'chat-1', gen_random_uuid(), '1 hour', 'us')`,
		`SELECT lease.force_release('acme', 'chat-1', NULL, 'prometheus test')`,
		`SELECT lease.acquire('globex', 'chat-9', gen_random_uuid(), '1 hour', 'us')`,
		`SELECT lease.acquire('globex', 'chat-8', gen_random_uuid(), '1 hour', 'us')`,
		`SELECT lease.acquire('globex', 'chat-7', gen_random_uuid(), '1 hour', 'us')`,
	} {
		if _, err := usPool.Exec(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	prom.waitFor(t, "each context's held leases and transitions", func() bool {
		held := prom.query(t, "leasetop_leases_held", "context")
		acquired := prom.query(t, `leasetop_transitions_total{kind="acquired"}`, "context")
		forced := prom.query(t, `leasetop_transitions_total{kind="force_released"}`, "context")
		return held["eu"] == 2 && held["us"] == 3 && acquired["eu"] == 2 && acquired["us"] == 4 &&
			forced["eu"] == 0 && forced["us"] == 1
	})
	if n := prom.query(t, `count(leasetop_leases_held)`, ""); n[""] != 2 {
		t.Errorf("leasetop_leases_held has %v series, want one per context", n[""])
	}
	if q := prom.query(t, `count(go_goroutines)`, ""); q[""] != 1 {
		t.Errorf("go_goroutines has %v series, want the process's one, with no context label", q[""])
	}

	usPool.Close()
	usSrv.Stop()
	if _, err := euPool.Exec(ctx, `SELECT lease.acquire('acme', 'chat-3', gen_random_uuid(), '1 hour', 'eu')`); err != nil {
		t.Fatal(err)
	}
	prom.waitFor(t, "us not live, eu's third lease counted", func() bool {
		state := prom.query(t, `leasetop_feed_state{state="live"}`, "context")
		held := prom.query(t, "leasetop_leases_held", "context")
		return state["us"] == 0 && state["eu"] == 1 && held["eu"] == 3
	})
	if strings.Contains(exp.Stderr.String(), "panic") {
		t.Errorf("exporter stderr: %s", exp.Stderr.String())
	}
}
