package tcpproxy_test

import (
	"bufio"
	"io"
	"net"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/tcpproxy"
)

// echoServer echoes every line until its listener closes.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return ln.Addr().String()
}

func TestProxyHoldsAndDelivers(t *testing.T) {
	p, err := tcpproxy.Start(echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	roundTrip := func(msg string) (string, error) {
		if _, err := io.WriteString(c, msg+"\n"); err != nil {
			return "", err
		}
		return r.ReadString('\n')
	}
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
	// Nothing comes back while held: the read times out, the connection stays open.
	c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if got, err := r.ReadString('\n'); err == nil {
		t.Fatalf("read %q while requests were held, want a timeout", got)
	}
	c.SetReadDeadline(time.Time{})
	p.Resume()
	if got, err := r.ReadString('\n'); err != nil || got != "two\n" {
		t.Fatalf("after Resume got %q, %v; want the held %q", got, err, "two\n")
	}
	if got, err := roundTrip("three"); err != nil || got != "three\n" {
		t.Fatalf("after Resume: got %q, %v", got, err)
	}
}
