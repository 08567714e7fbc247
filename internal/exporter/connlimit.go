package exporter

import (
	"net"
	"sync"
)

// limitConns returns a net.Listener that has at most n of ln's connections
// open at once. When all n are open, Accept first asks evict (if not nil)
// to close one that is doing nothing, and otherwise waits, leaving the next
// connection in the kernel's backlog, until one of them is closed. The
// exporter's file descriptors beyond n stay free for its database
// connections, however many clients connect. Closing it unblocks a waiting
// Accept.
func limitConns(ln net.Listener, n int, evict func() bool) net.Listener {
	return &connLimiter{Listener: ln, slots: make(chan struct{}, max(n, 1)), closed: make(chan struct{}), evict: evict}
}

// connLimiter is a net.Listener that limits its open connections.
type connLimiter struct {
	net.Listener
	slots     chan struct{} // one element per open connection
	closed    chan struct{} // closed by Close
	closeOnce sync.Once
	evict     func() bool // closes an idle connection, if there is one
}

// Accept waits for a free slot, then accepts a connection that frees it
// when closed.
func (l *connLimiter) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	default:
		if l.evict != nil {
			l.evict() // its Close frees a slot
		}
		select {
		case l.slots <- struct{}{}:
		case <-l.closed:
			return nil, net.ErrClosed
		}
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &limitConn{Conn: c, free: func() { <-l.slots }}, nil
}

// Close closes the listener and unblocks Accept.
func (l *connLimiter) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// limitConn frees its slot once, on its first Close.
type limitConn struct {
	net.Conn
	once sync.Once
	free func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.free)
	return err
}
