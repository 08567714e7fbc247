package tcpproxy_test

import (
	"bufio"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/testkit/tcpproxy"
)

// lineLog is what an echo server received, line by line, in the order it
// read them from all its connections.
type lineLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *lineLog) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, s)
}

func (l *lineLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.lines)
}

// echoServer echoes every line, recording it first, until its listener
// closes.
func echoServer(t *testing.T) (string, *lineLog) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	log := &lineLog{}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					log.add(strings.TrimSuffix(line, "\n"))
					if _, err := io.WriteString(c, line); err != nil {
						return
					}
				}
			})
		}
	})
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return ln.Addr().String(), log
}

// dialLines connects to addr and returns a function that sends a line and
// reads the reply line.
func dialLines(t *testing.T, addr string) (net.Conn, func(string) (string, error)) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	r := bufio.NewReader(c)
	return c, func(msg string) (string, error) {
		if _, err := io.WriteString(c, msg+"\n"); err != nil {
			return "", err
		}
		return r.ReadString('\n')
	}
}

// TestProxyHoldsAndDelivers: a line sent while the proxy holds requests
// reaches the server only after Resume. That is shown by an order, not a
// wait: once the proxy has the line, a marker sent to the server directly
// makes its round trip, and the server must read the held line after the
// marker.
func TestProxyHoldsAndDelivers(t *testing.T) {
	addr, log := echoServer(t)
	p, err := tcpproxy.Start(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, roundTrip := dialLines(t, p.Addr())
	if got, err := roundTrip("one"); err != nil || got != "one\n" {
		t.Fatalf("forwarding: got %q, %v; want %q", got, err, "one\n")
	}

	p.HoldRequests()
	if _, err := io.WriteString(c, "two\n"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for p.Held() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("Held() stayed 0 after a write while holding")
		}
		time.Sleep(5 * time.Millisecond)
	}
	_, direct := dialLines(t, addr)
	if got, err := direct("mark"); err != nil || got != "mark\n" {
		t.Fatalf("the marker, sent to the server directly: got %q, %v", got, err)
	}
	p.Resume()
	r := bufio.NewReader(c)
	if got, err := r.ReadString('\n'); err != nil || got != "two\n" {
		t.Fatalf("after Resume got %q, %v; want the held %q", got, err, "two\n")
	}
	if got, want := log.get(), []string{"one", "mark", "two"}; !slices.Equal(got, want) {
		t.Errorf("the server read %q, want %q: the held line must arrive after the marker sent while it was held", got, want)
	}
	if _, err := io.WriteString(c, "three\n"); err != nil {
		t.Fatal(err)
	}
	if got, err := r.ReadString('\n'); err != nil || got != "three\n" {
		t.Fatalf("after Resume: got %q, %v", got, err)
	}
}
