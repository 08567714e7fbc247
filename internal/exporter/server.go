package exporter

import (
	"log"
	"net"
	"net/http"
	"time"
)

// How the exporter's HTTP side is bounded, whoever connects to it (see
// NewServer).
const (
	// MaxConns caps the connections served at once (lower when the
	// process's file descriptor limit is low: half of it).
	MaxConns = 256
	// ReadHeaderTimeout bounds the wait for a request's headers, on a new
	// connection or a slow one.
	ReadHeaderTimeout = 10 * time.Second
	// ReadTimeout bounds reading a whole request.
	ReadTimeout = 15 * time.Second
	// WriteTimeout bounds a request from the end of its headers to the end
	// of its answer: longer than /metrics' own 30 s timeout.
	WriteTimeout = 40 * time.Second
	// IdleTimeout closes a keep-alive connection that sends no next request:
	// longer than the common 15 s scrape interval, so Prometheus reuses its
	// connection.
	IdleTimeout = 30 * time.Second
)

// ConnCap is how many connections the exporter serves at once when the
// process may open nofile files: MaxConns, or half of nofile if that is
// less, so the other half stays free for the database connections (which
// reconnect after every outage), the listener and the log.
func ConnCap(nofile uint64) int {
	return int(max(min(nofile/2, MaxConns), 1))
}

// NewServer returns the server for h on ln, with the timeouts above, and the
// listener to serve it on: ln with at most ConnCap(RLIMIT_NOFILE)
// connections open, of which the one idle longest is closed when another
// comes. Without them a client could keep thousands of idle keep-alive
// connections open for ever, and many clients could take every file
// descriptor, so that scrapes and the database's reconnects failed.
func NewServer(ln net.Listener, h http.Handler, errLog *log.Logger) (*http.Server, net.Listener, int) {
	n := ConnCap(fileLimit())
	idle := newIdleConns()
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadTimeout,
		WriteTimeout:      WriteTimeout,
		IdleTimeout:       IdleTimeout,
		ErrorLog:          errLog,
		ConnState:         idle.track,
	}
	return srv, limitConns(ln, n, idle.evictOldest), n
}
