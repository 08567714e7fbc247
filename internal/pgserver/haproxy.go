package pgserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// haproxy is an HAProxy in TCP mode in front of a Patroni cluster's nodes,
// routing to the node whose REST API answers GET /primary with 200, as
// Patroni's docs deploy it: checked every 200 ms, and the sessions to a
// node marked down shut (on-marked-down shutdown-sessions), so that no
// client keeps writing to a demoted primary through it.
type haproxy struct {
	*daemon
	port int
	sock string // its stats socket
}

// haproxyBinary finds haproxy (Debian installs it in /usr/sbin, not always
// on a user's PATH).
func haproxyBinary() (string, error) {
	if p, err := exec.LookPath("haproxy"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/sbin/haproxy"); err == nil {
		return "/usr/sbin/haproxy", nil
	}
	return "", errors.New("haproxy not found: install it (Debian/Ubuntu: apt-get install -y --no-install-recommends haproxy)")
}

// haproxyConfig returns the configuration for listening on port.
func haproxyConfig(sock string, port int, nodes []*Node) string {
	var b strings.Builder
	fmt.Fprintf(&b, `global
  maxconn 1000
  stats socket %s mode 600 level operator

defaults
  mode tcp
  timeout connect 2s
  timeout client 1h
  timeout server 1h
  timeout check 1s

listen primary
  bind 127.0.0.1:%d
  option httpchk GET /primary
  http-check expect status 200
  default-server inter 200ms fall 2 rise 2 on-marked-down shutdown-sessions
`, sock, port)
	for _, n := range nodes {
		fmt.Fprintf(&b, "  server %s 127.0.0.1:%d maxconn 400 check port %d\n", n.Name, n.PGPort, n.APIPort)
	}
	return b.String()
}

// startHAProxy starts HAProxy for nodes in dir and waits until its health
// checks mark only primary (a node's name) up and a connection through it
// reaches a primary (dbURL, a node's URL, gives the credentials). HAProxy
// starts with every server up until its first check.
func startHAProxy(ctx context.Context, cred *syscall.Credential, dir string, nodes []*Node, primary, dbURL string, timeout time.Duration) (*haproxy, error) {
	bin, err := haproxyBinary()
	if err != nil {
		return nil, err
	}
	var lastErr error
	for range 3 { // a port picked free may be taken before HAProxy binds it
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		cfg := filepath.Join(dir, "haproxy.cfg")
		sock := filepath.Join(dir, "haproxy.sock")
		if err := os.WriteFile(cfg, []byte(haproxyConfig(sock, port, nodes)), 0o644); err != nil {
			return nil, fmt.Errorf("write %s: %w", cfg, err)
		}
		d, err := startDaemon(cred, dir, filepath.Join(dir, "haproxy.log"), bin, "-db", "-f", cfg)
		if err != nil {
			return nil, err
		}
		h := &haproxy{daemon: d, port: port, sock: sock}
		u, err := url.Parse(dbURL)
		if err != nil {
			return nil, err
		}
		u.Host = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if lastErr = poll(ctx, timeout, d, "its checks to mark only the primary up, and a connection through it to reach it", func(ctx context.Context) error {
			up, err := h.up()
			if err != nil {
				return err
			}
			if len(up) != 1 || up[0] != primary {
				return fmt.Errorf("servers up: %v, want only %s", up, primary)
			}
			return reachesPrimary(ctx, u.String())
		}); lastErr == nil {
			return h, nil
		}
		d.stop(syscall.SIGTERM, 5*time.Second)
	}
	return nil, lastErr
}

// reachesPrimary connects to dsn and checks that the server accepts writes.
func reachesPrimary(ctx context.Context, dsn string) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var standby bool
	if err := conn.QueryRow(ctx, `SELECT pg_is_in_recovery()`).Scan(&standby); err != nil {
		return err
	}
	if standby {
		return errors.New("reached a standby")
	}
	return nil
}

// up returns the names of the servers HAProxy's checks consider up now
// ("show stat" on its stats socket).
func (h *haproxy) up() ([]string, error) {
	conn, err := net.DialTimeout("unix", h.sock, 2*time.Second)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := conn.Write([]byte("show stat\n")); err != nil {
		return nil, err
	}
	out, err := io.ReadAll(conn)
	if err != nil {
		return nil, err
	}
	var up []string
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Split(line, ",")
		// pxname,svname,...: the 18th field is status
		if len(f) > 17 && f[0] == "primary" && f[1] != "FRONTEND" && f[1] != "BACKEND" && strings.HasPrefix(f[17], "UP") {
			up = append(up, f[1])
		}
	}
	return up, nil
}

// HAProxyUp returns the nodes HAProxy's health checks consider up: those it
// sends new connections to.
func (c *Cluster) HAProxyUp() ([]string, error) {
	if c.haproxy == nil {
		return nil, errors.New("the cluster has no HAProxy")
	}
	return c.haproxy.up()
}

// acceptsConnections connects to dsn and runs one query.
func acceptsConnections(ctx context.Context, dsn string) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, `SELECT 1`)
	return err
}
