package pgserver

import (
	"cmp"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
)

// Replication is how a Patroni cluster replicates (Patroni's
// docs/replication_modes.rst).
type Replication int

const (
	// Asynchronous is Patroni's default: a commit returns once the primary
	// flushed it; a failover may lose up to maximum_lag_on_failover bytes
	// plus about a loop's worth of writes.
	Asynchronous Replication = iota
	// Synchronous is synchronous_mode: a commit returns once the
	// synchronous standby flushed it, and Patroni never promotes a standby
	// that may lack one; while no synchronous standby is available the
	// primary accepts writes unreplicated.
	Synchronous
	// SynchronousStrict is synchronous_mode_strict as well: with no
	// synchronous standby, writes block instead.
	SynchronousStrict
)

// String names the mode as the docs and the FAULT lines do.
func (r Replication) String() string {
	switch r {
	case Synchronous:
		return "synchronous_mode"
	case SynchronousStrict:
		return "synchronous_mode_strict"
	default:
		return "asynchronous"
	}
}

// Patroni's timing in the generated configuration: a one-second loop and a
// ten-second leader key, the shortest Patroni accepts with room for its
// retries (loop_wait + 2*retry_timeout <= ttl).
const (
	patroniTTL          = 10
	patroniLoopWait     = 1
	patroniRetryTimeout = 3
	defaultMaxLag       = 1 << 20 // Patroni's default maximum_lag_on_failover, bytes
)

// patroniConfig returns node's Patroni configuration as JSON, which is YAML
// too: the cluster's scope, the node's REST API and PostgreSQL on loopback,
// etcd, and the bootstrap settings every node brings (the first one to
// start writes them to etcd).
func (c *Cluster) patroniConfig(n *Node) ([]byte, error) {
	dcs := map[string]any{
		"ttl":                     patroniTTL,
		"loop_wait":               patroniLoopWait,
		"retry_timeout":           patroniRetryTimeout,
		"maximum_lag_on_failover": cmp.Or(c.opts.MaximumLagOnFailover, defaultMaxLag),
		// A primary whose postmaster died fails over at once rather than
		// being restarted in place for up to 300 s (the default).
		"primary_start_timeout":   0,
		"synchronous_mode":        c.opts.Replication != Asynchronous,
		"synchronous_mode_strict": c.opts.Replication == SynchronousStrict,
		"postgresql": map[string]any{
			"use_pg_rewind": true,
			"use_slots":     true,
			"parameters": map[string]any{
				"wal_log_hints":   "on", // pg_rewind needs it (or data checksums)
				"max_connections": 300,
				"wal_keep_size":   "128MB",
			},
		},
	}
	params := map[string]any{
		"unix_socket_directories": n.dir,
		// The operating system does not crash in these tests, only
		// processes die: a flush to the page cache survives them, and
		// sparing the loaded machine the fsyncs keeps the timing honest.
		"fsync":                               "off",
		"synchronous_commit":                  "on",
		"log_min_messages":                    "warning",
		"log_line_prefix":                     "%m [%p] ",
		"idle_in_transaction_session_timeout": "30s",
	}
	for k, v := range c.opts.Settings {
		params[k] = v
	}
	pgPort, apiPort := strconv.Itoa(n.PGPort), strconv.Itoa(n.APIPort)
	replPort := strconv.Itoa(n.repl.Port())
	cfg := map[string]any{
		"scope": c.scope,
		"name":  n.Name,
		"log":   map[string]any{"level": "INFO"},
		"restapi": map[string]any{
			"listen":          "127.0.0.1:" + apiPort,
			"connect_address": "127.0.0.1:" + apiPort,
		},
		"etcd3": map[string]any{"hosts": []string{n.dcs.Addr()}, "use_proxies": true},
		"bootstrap": map[string]any{
			"dcs":    dcs,
			"initdb": []any{map[string]string{"encoding": "UTF8"}, map[string]string{"locale": "C"}, map[string]string{"auth": "scram-sha-256"}},
			"pg_hba": []string{
				"host replication replicator 127.0.0.1/32 scram-sha-256",
				"host all all 127.0.0.1/32 scram-sha-256",
			},
		},
		"postgresql": map[string]any{
			"listen":          "127.0.0.1:" + pgPort,
			"connect_address": "127.0.0.1:" + replPort,
			"data_dir":        n.dataDir(),
			"bin_dir":         c.bin,
			"pgpass":          filepath.Join(n.dir, "pgpass"),
			"authentication": map[string]any{
				"superuser":   map[string]string{"username": "postgres", "password": c.password},
				"replication": map[string]string{"username": "replicator", "password": c.replPassword},
				"rewind":      map[string]string{"username": "postgres", "password": c.password},
			},
			"parameters": params,
		},
		"watchdog": map[string]any{"mode": "off"},
		"tags":     map[string]any{"nofailover": false, "noloadbalance": false, "clonefrom": false, "nosync": false},
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("patroni configuration: %w", err)
	}
	return b, nil
}
