// Package tcpproxy is a TCP proxy for fault tests: it forwards 127.0.0.1
// connections to a target and can stop forwarding without closing anything,
// the way a network partition or a blackholed route looks to both ends
// (requests vanish, no RST, no FIN). Resume delivers what was held back.
package tcpproxy

import (
	"net"
	"sync"
	"sync/atomic"
)

// Proxy forwards connections accepted on Addr to a target address.
type Proxy struct {
	ln     net.Listener
	target string
	up     *gate // client -> server
	down   *gate // server -> client
	held   atomic.Int64
	slow   atomic.Int64 // Slow's delay in nanoseconds, 0: full speed
	sent   atomic.Int64 // bytes delivered to clients

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// Start listens on a free 127.0.0.1 port and forwards to target.
func Start(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, up: newGate(), down: newGate(), conns: make(map[net.Conn]struct{})}
	p.wg.Go(p.accept)
	return p, nil
}

// Addr returns the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Port returns the proxy's port.
func (p *Proxy) Port() int { return p.ln.Addr().(*net.TCPAddr).Port }

// Blackhole stops forwarding in both directions. Connections stay open and
// new ones are accepted, but no byte gets through until Resume.
func (p *Proxy) Blackhole() { p.up.shut(); p.down.shut() }

// HoldRequests stops forwarding from clients to the server only: requests
// already sent wait in the proxy (see Held) until Resume delivers them.
func (p *Proxy) HoldRequests() { p.up.shut() }

// Resume forwards again in both directions, delivering what was held.
func (p *Proxy) Resume() { p.up.open(); p.down.open() }

// Held returns how many client bytes arrived while requests were held (since
// the proxy started): a request "on its way".
func (p *Proxy) Held() int64 { return p.held.Load() }

// Close closes the listener and every connection and waits for the proxy's
// goroutines.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.ln.Close()
	p.up.open()
	p.down.open()
	p.wg.Wait()
}

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		if !p.track(c, s) {
			return
		}
		p.wg.Go(func() { p.pump(s, c, p.up, true) })
		p.wg.Go(func() { p.pump(c, s, p.down, false) })
	}
}

func (p *Proxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		for _, c := range conns {
			c.Close()
		}
		return false
	}
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
	return true
}

// pump copies src to dst, waiting at g before each write.
func (p *Proxy) pump(dst, src net.Conn, g *gate, upstream bool) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if upstream && !g.isOpen() {
				p.held.Add(int64(n))
			}
			if werr := p.write(dst, buf[:n], g, upstream); werr != nil {
				return
			}
		}
		if err != nil {
			return // EOF, reset or closed: the other pump sees its side closed
		}
	}
}

// gate blocks writers while shut.
type gate struct {
	mu     sync.Mutex
	opened chan struct{} // closed while the gate is open
}

func newGate() *gate {
	ch := make(chan struct{})
	close(ch)
	return &gate{opened: ch}
}

func (g *gate) shut() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.opened:
		g.opened = make(chan struct{})
	default:
	}
}

func (g *gate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.opened:
	default:
		close(g.opened)
	}
}

func (g *gate) isOpen() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.opened:
		return true
	default:
		return false
	}
}

func (g *gate) wait() {
	g.mu.Lock()
	ch := g.opened
	g.mu.Unlock()
	<-ch
}
