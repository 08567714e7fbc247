package exporter

import (
	"net"
	"net/http"
	"sync"
)

// idleConns tracks the server's connections that are doing nothing: new
// ones that have sent no byte yet, and keep-alive ones between requests,
// in the order they became so. When the connection cap is reached the
// listener closes the oldest of them to accept the next connection, so
// clients that only hold connections cannot keep a scraper out; only
// requests in progress, each bounded by the server's timeouts, can.
type idleConns struct {
	mu    sync.Mutex
	seq   uint64              // order of becoming idle
	conns map[net.Conn]uint64 // idle connection -> its seq
}

func newIdleConns() *idleConns { return &idleConns{conns: map[net.Conn]uint64{}} }

// track is the server's ConnState hook.
func (t *idleConns) track(c net.Conn, s http.ConnState) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch s {
	case http.StateNew, http.StateIdle:
		t.seq++
		t.conns[c] = t.seq
	default:
		delete(t.conns, c)
	}
}

// evictOldest closes the connection idle the longest and reports whether
// there was one. A scan of at most the connection cap's entries, only when
// the cap is reached.
func (t *idleConns) evictOldest() bool {
	t.mu.Lock()
	var (
		oldest net.Conn
		seq    uint64
	)
	for c, s := range t.conns {
		if oldest == nil || s < seq {
			oldest, seq = c, s
		}
	}
	delete(t.conns, oldest)
	t.mu.Unlock()
	if oldest == nil {
		return false
	}
	_ = oldest.Close()
	return true
}
