package exporter_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/exporter"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestReadyOnlyAfterTheFirstSync: before the exporter has applied its first
// read of the database, /readyz answers 503 (its gauges describe nothing
// yet) while /healthz and /metrics answer 200; once Run has synced, /readyz
// answers 200.
func TestReadyOnlyAfterTheFirstSync(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store, err := data.Open(ctx, db.URL)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	defer store.Close()
	exp := exporter.New(store, exporter.Config{})
	srv := httptest.NewServer(exp.Handler(nil))
	defer srv.Close()

	get := func(path string) (int, string) {
		t.Helper()
		code, body, err := httpGet(srv.URL + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		return code, body
	}
	if code, body := get("/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "not ready") {
		t.Errorf("GET /readyz before Run = %d %q, want 503 not ready", code, body)
	}
	for _, path := range []string{"/healthz", "/metrics"} {
		if code, body := get(path); code != http.StatusOK {
			t.Errorf("GET %s before Run = %d %q, want 200", path, code, body)
		}
	}

	done := make(chan error, 1)
	go func() { done <- exp.Run(ctx) }()
	pgtest.Eventually(t, 30*time.Second, "/readyz to answer 200 after the first sync", func() bool {
		code, _ := get("/readyz")
		return code == http.StatusOK
	})
	cancel()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after its context was cancelled")
	}
}
