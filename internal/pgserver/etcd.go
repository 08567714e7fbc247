package pgserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// etcd is a one-member etcd cluster on loopback: the consensus store that
// holds a Patroni cluster's leader key.
type etcd struct {
	*daemon
	clientPort int
}

// startEtcd starts etcd with its data in dir/etcd, as cred, and waits until
// GET /health says it is healthy (it has elected itself leader).
func startEtcd(ctx context.Context, cred *syscall.Credential, dir string, timeout time.Duration) (*etcd, error) {
	bin, err := exec.LookPath("etcd")
	if err != nil {
		return nil, ErrNoPatroni
	}
	var lastErr error
	for range 3 { // a port picked free may be taken before etcd binds it
		client, err := freePort()
		if err != nil {
			return nil, err
		}
		peer, err := freePort()
		if err != nil {
			return nil, err
		}
		data := filepath.Join(dir, "etcd")
		_ = os.RemoveAll(data)
		clientURL := "http://127.0.0.1:" + strconv.Itoa(client)
		peerURL := "http://127.0.0.1:" + strconv.Itoa(peer)
		d, err := startDaemon(cred, dir, filepath.Join(dir, "etcd.log"), bin,
			"--name", "etcd0", "--data-dir", data,
			"--listen-client-urls", clientURL, "--advertise-client-urls", clientURL,
			"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
			"--initial-cluster", "etcd0="+peerURL, "--initial-cluster-state", "new",
			"--log-level", "warn", "--logger", "zap")
		if err != nil {
			return nil, err
		}
		e := &etcd{daemon: d, clientPort: client}
		if lastErr = poll(ctx, timeout, d, "GET /health", e.healthy); lastErr == nil {
			return e, nil
		}
		d.stop(syscall.SIGTERM, 5*time.Second)
	}
	return nil, lastErr
}

// healthy asks etcd's GET /health.
func (e *etcd) healthy(ctx context.Context) error {
	var h struct {
		Health string `json:"health"`
	}
	if err := getJSON(ctx, fmt.Sprintf("http://127.0.0.1:%d/health", e.clientPort), &h); err != nil {
		return err
	}
	if h.Health != "true" {
		return fmt.Errorf("health %q", h.Health)
	}
	return nil
}

// getJSON GETs url and decodes its JSON body into dst (whatever the status:
// Patroni answers its health checks with a body and 503).
func getJSON(ctx context.Context, url string, dst any) error {
	_, err := getStatus(ctx, url, dst)
	return err
}

// getStatus GETs url and returns its status code, decoding a JSON body into
// dst when dst is not nil.
func getStatus(ctx context.Context, url string, dst any) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if dst != nil {
		if err := json.NewDecoder(resp.Body).Decode(dst); err != nil {
			return resp.StatusCode, fmt.Errorf("GET %s: %d, body: %w", url, resp.StatusCode, err)
		}
	}
	return resp.StatusCode, nil
}
