package exporter

import (
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Logger receives the /metrics handler's errors, one line each (a
// *log.Logger is one).
type Logger interface {
	Println(v ...any)
}

// Handler serves the exporter's endpoints:
//
//   - /metrics: the metrics, in Prometheus' text format;
//   - /healthz: 200 while the process serves;
//   - /readyz: 200 once the first sync is applied, 503 before.
//
// /metrics answers 200 whatever state the database is in: a collection
// error is logged to errLog (if not nil) and the rest is served.
func (e *Exporter) Handler(errLog Logger) http.Handler {
	mux := http.NewServeMux()
	opts := promhttp.HandlerOpts{
		ErrorHandling: promhttp.ContinueOnError,
		Registry:      e.registry, // promhttp_metric_handler_errors_total
		Timeout:       30 * time.Second,
	}
	if errLog != nil {
		opts.ErrorLog = errLog
	}
	mux.Handle("GET /metrics", inTurn(4, scrapeWait, promhttp.HandlerFor(e.registry, opts)))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		text(w, http.StatusOK, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !e.Ready() {
			text(w, http.StatusServiceUnavailable, "not ready: waiting for the first read of the database")
			return
		}
		text(w, http.StatusOK, "ready")
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		text(w, http.StatusOK, "leasetop exporter: /metrics, /healthz, /readyz")
	})
	return mux
}

func text(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	fmt.Fprintln(w, msg)
}

// scrapeWait is how long a scrape waits for its turn before a 503.
const scrapeWait = 10 * time.Second

// inTurn runs at most n requests of h at once; the others wait their turn,
// for up to wait (or until their client goes), and then get a 503. A scrape
// takes milliseconds, so a real scraper among clients that fetch /metrics
// in a loop waits a little instead of being refused (promhttp's
// MaxRequestsInFlight refuses at once: 31 of 50 scrapes got a 503 beside 32
// such clients).
func inTurn(n int, wait time.Duration, h http.Handler) http.Handler {
	slots := make(chan struct{}, n)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case slots <- struct{}{}:
		case <-r.Context().Done():
			return
		case <-t.C:
			text(w, http.StatusServiceUnavailable, "busy: too many scrapes at once")
			return
		}
		defer func() { <-slots }()
		h.ServeHTTP(w, r)
	})
}
