package tcpproxy

import (
	"net"
	"time"
)

// slowChunk is the most a slowed proxy delivers to a client at a time.
const slowChunk = 2 << 10

// Slow makes the proxy deliver what the server sends a slowChunk at a time,
// waiting d before each: a link that keeps delivering, slowly. 0 restores
// full speed. Requests to the server are not slowed.
func (p *Proxy) Slow(d time.Duration) { p.slow.Store(int64(d)) }

// Sent returns how many bytes the proxy has delivered to clients.
func (p *Proxy) Sent() int64 { return p.sent.Load() }

// write forwards b to dst, waiting at g before each piece, and in pieces
// with Slow's delay when slowed and b goes to a client.
func (p *Proxy) write(dst net.Conn, b []byte, g *gate, upstream bool) error {
	for len(b) > 0 {
		n := len(b)
		if d := time.Duration(p.slow.Load()); d > 0 && !upstream {
			n = min(n, slowChunk)
			time.Sleep(d)
		}
		g.wait()
		if _, err := dst.Write(b[:n]); err != nil {
			return err
		}
		if !upstream {
			p.sent.Add(int64(n))
		}
		b = b[n:]
	}
	return nil
}
