package bench

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Config is one bench run. Zero fields take the documented defaults.
type Config struct {
	// ConnConfig connects each client; every client gets its own connection.
	// DSN is parsed by data.ParseConnConfig.
	DSN string
	// Clients is the number of concurrent clients, each with its own
	// connection. Default 16.
	Clients int
	// Keys is how many lease keys the closed-loop workloads spread over,
	// split between the clients (so uncontended workloads never share one).
	// Default 1000; at least Clients.
	Keys int
	// Duration is how long each workload is measured. Default 5 s.
	Duration time.Duration
	// Warmup runs each workload before measuring; zero means none (the
	// command's default is 1 s).
	Warmup time.Duration
	// Only selects workloads by name or group (see Names); empty means all
	// but the opt-in ones (monitor).
	Only []string
	// MonitorLeases is how many live leases the monitor and poll-cost
	// workloads write. Default 100,000.
	MonitorLeases int
	// PoolerDSN is the same database through a transaction pooler, for the
	// pooler workload (opt-in); parsed by data.ParseConnConfig.
	PoolerDSN string
	// Server describes the database for the report header ("embedded" or
	// "host:port/db"). Informational only.
	Server string
	// DataDir, when known, is where the server keeps its data; the report names
	// its file system (fsync's cost depends on it).
	DataDir string
	// Progress, when set, is told each workload's name before it runs.
	Progress func(name string)
	// Meter, when set, shows how a long step advances: the bulk loads'
	// rows.
	Meter Meter
}

// Meter shows a long step's progress (what internal/progress.Meter does
// on the command's stderr). A Meter that also has Resume(done int64) is
// told where a step's count starts when it grows an earlier step's rows.
type Meter interface {
	// Start begins a step that counts total units ("leases").
	Start(task string, total int64, unit string)
	// Set says how many units are done.
	Set(done int64)
	// Done ends the step; a summary, when not empty, stays as a line.
	Done(summary string)
}

// noMeter shows nothing.
type noMeter struct{}

func (noMeter) Start(string, int64, string) {}
func (noMeter) Set(int64)                   {}
func (noMeter) Done(string)                 {}

// Limits on the flags, for a clear error before any connection.
const (
	MaxClients  = 256
	MaxKeys     = 1_000_000
	MinDuration = 10 * time.Millisecond
	MaxDuration = time.Hour
)

func (c Config) withDefaults() Config {
	c.Clients = cmp.Or(c.Clients, 16)
	c.Keys = cmp.Or(c.Keys, 1000)
	c.Duration = cmp.Or(c.Duration, 5*time.Second)
	c.MonitorLeases = cmp.Or(c.MonitorLeases, 100_000)
	return c
}

// Validate reports the first out-of-range field as one line.
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.Clients < 1 || c.Clients > MaxClients:
		return fmt.Errorf("--clients must be between 1 and %d, got %d", MaxClients, c.Clients)
	case c.Keys < c.Clients || c.Keys > MaxKeys:
		return fmt.Errorf("--keys must be between --clients (%d) and %d, got %d", c.Clients, MaxKeys, c.Keys)
	case c.Duration < MinDuration || c.Duration > MaxDuration:
		return fmt.Errorf("--duration must be between %v and %v, got %v", MinDuration, MaxDuration, c.Duration)
	case c.MonitorLeases < 1 || c.MonitorLeases > MaxKeys:
		return fmt.Errorf("--monitor-leases must be between 1 and %d, got %d", MaxKeys, c.MonitorLeases)
	case c.Warmup < 0 || c.Warmup > MaxDuration:
		return fmt.Errorf("--warmup must be between 0 and %v, got %v", MaxDuration, c.Warmup)
	}
	_, err := selectWorkloads(c.Only)
	return err
}

// Selects reports whether the run's Only selects the workload named name.
func (c Config) Selects(name string) bool {
	ws, err := selectWorkloads(c.Only)
	return err == nil && slices.ContainsFunc(ws, func(w workload) bool { return w.name == name })
}

// Names returns every workload name, in the order they run.
func Names() []string {
	var names []string
	for _, w := range workloads() {
		names = append(names, w.name)
	}
	return names
}

// selectWorkloads returns the workloads named in only, all when only is
// empty. A name that is not a workload's may be a group: the part before the
// first '-' ("handoff" selects handoff-notify, handoff-poll-100ms and
// handoff-poll-1s). "acquire" is a workload, so it selects only itself.
func selectWorkloads(only []string) ([]workload, error) {
	all := workloads()
	if len(only) == 0 {
		return slices.DeleteFunc(all, func(w workload) bool { return w.optIn }), nil
	}
	want := map[string]bool{}
	for _, name := range only {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		exact := slices.ContainsFunc(all, func(w workload) bool { return w.name == name })
		group := slices.ContainsFunc(all, func(w workload) bool { return w.group() == name })
		if !exact && !group {
			return nil, fmt.Errorf("--only: unknown workload %q: choose from %s", name, strings.Join(Names(), ", "))
		}
		for _, w := range all {
			if w.name == name || (!exact && w.group() == name) {
				want[w.name] = true
			}
		}
	}
	var out []workload
	for _, w := range all {
		if want[w.name] {
			out = append(out, w)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--only: no workload named: choose from %s", strings.Join(Names(), ", "))
	}
	return out, nil
}
