package pgserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Primary returns the node whose Patroni answers GET /primary with 200 and
// whose PostgreSQL accepts writes, waiting up to timeout for exactly one
// such node other than not (nil: any node). A failover test passes the old primary as not and measures how
// long the cluster had none.
func (c *Cluster) Primary(ctx context.Context, timeout time.Duration, not *Node) (*Node, error) {
	var found *Node
	err := poll(ctx, timeout, nil, "one primary (GET /primary answering 200)", func(ctx context.Context) error {
		var primaries []*Node
		for _, n := range c.nodes {
			if n.Is(ctx, "/primary") {
				primaries = append(primaries, n)
			}
		}
		if len(primaries) != 1 || primaries[0] == not {
			return fmt.Errorf("%d nodes answer 200", len(primaries))
		}
		// Patroni calls itself primary once it has asked PostgreSQL to
		// promote; clients can write once PostgreSQL has.
		if err := reachesPrimary(ctx, c.URL(primaries[0], "postgres")); err != nil {
			return fmt.Errorf("%s answers 200 but: %w", primaries[0].Name, err)
		}
		found = primaries[0]
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%w\n%s", err, c.Logs(8))
	}
	return found, nil
}

// WaitSync waits up to the cluster's start-up timeout until a node other
// than not (nil: any) answers GET /sync with 200 (Patroni made it the
// synchronous standby) and returns it.
func (c *Cluster) WaitSync(ctx context.Context, not *Node) (*Node, error) {
	var found *Node
	err := poll(ctx, c.opts.Timeout, nil, "a synchronous standby (GET /sync answering 200)", func(ctx context.Context) error {
		for _, n := range c.nodes {
			if n != not && n.Is(ctx, "/sync") {
				found = n
				return nil
			}
		}
		return fmt.Errorf("no node is")
	})
	if err != nil {
		return nil, fmt.Errorf("%w\n%s", err, c.Logs(8))
	}
	return found, nil
}

// Switchover asks Patroni (POST /switchover on the leader's REST API, what
// `patronictl switchover` sends) to hand the leader key from leader to
// candidate now. Patroni answers once the candidate is promoted, or with
// an error.
func (c *Cluster) Switchover(ctx context.Context, leader, candidate *Node) error {
	body, err := json.Marshal(map[string]string{"leader": leader.Name, "candidate": candidate.Name})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, leader.apiURL("/switchover"), bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("switchover %s to %s: %w", leader.Name, candidate.Name, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("switchover %s to %s: %d %s", leader.Name, candidate.Name, resp.StatusCode, strings.TrimSpace(string(msg)))
	}
	return nil
}

// Lag returns how many bytes n is behind the leader as Patroni sees it
// (GET /cluster on n's REST API: the leader's WAL position and n's, as
// both last wrote them to etcd), the figure its failover check compares
// with maximum_lag_on_failover.
func (c *Cluster) Lag(ctx context.Context, n *Node) (int64, error) {
	var cl struct {
		Members []struct {
			Name string          `json:"name"`
			Lag  json.RawMessage `json:"lag"`
		} `json:"members"`
	}
	if err := getJSON(ctx, n.apiURL("/cluster"), &cl); err != nil {
		return 0, err
	}
	for _, m := range cl.Members {
		if m.Name == n.Name {
			var lag int64
			if err := json.Unmarshal(m.Lag, &lag); err != nil {
				return 0, fmt.Errorf("%s: lag %s", n.Name, m.Lag)
			}
			return lag, nil
		}
	}
	return 0, fmt.Errorf("%s is not in GET /cluster", n.Name)
}
