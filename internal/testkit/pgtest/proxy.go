package pgtest

import (
	"net/url"
	"testing"

	"github.com/leasetop/leasetop/internal/testkit/tcpproxy"
)

// Proxied starts a TCP proxy (internal/tcpproxy) in front of the server dsn
// names, closed when t ends, and returns it with dsn rewritten to connect
// through it: for tests that cut, blackhole or hold a client's connection.
func Proxied(t testing.TB, dsn string) (*tcpproxy.Proxy, string) {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("parse test URL: %v", err)
	}
	p, err := tcpproxy.Start(u.Host)
	if err != nil {
		t.Fatalf("start proxy: %v", err)
	}
	t.Cleanup(p.Close)
	u.Host = p.Addr()
	return p, u.String()
}
