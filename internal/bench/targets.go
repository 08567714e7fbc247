package bench

import "fmt"

// Ratio is a comparison computed from two results of the same run (or one
// result's absolute value), with its target when it has one.
type Ratio struct {
	Name   string  `json:"name"`
	Value  float64 `json:"value"`
	Unit   string  `json:"unit"` // "x" or "ms"
	Target string  `json:"target,omitempty"`
	Met    *bool   `json:"met,omitempty"`
	// Error says why there is no value: a workload it needs failed or
	// completed nothing. A target is then not met.
	Error string `json:"error,omitempty"`
}

// comparison defines a Ratio: stat of result num over stat of result den
// (den "" for an absolute value in ms), with an optional target.
type comparison struct {
	name     string
	num, den string
	stat     string // "p50", "p99", "max", "ops", "cpu" or "rss"
	op       string // "<=" or ">=" when there is a target
	limit    float64
}

// comparisons are the targets first (the costs the lease must stay within,
// against baselines measured in the same run), then the ratios that explain
// them.
func comparisons() []comparison {
	return []comparison{
		{name: "acquire p50 / plain UPSERT p50", num: "acquire", den: "upsert", stat: "p50", op: "<=", limit: 1.5},
		{name: "acquire+release cycles/s / the seed's UPSERT+DELETE cycles/s", num: "cycle", den: "seed-cycle", stat: "ops", op: ">=", limit: 0.5},
		{name: "acquire+release p50 / the seed's UPSERT+DELETE p50", num: "cycle", den: "seed-cycle", stat: "p50", op: "<=", limit: 2},
		{name: "acquire+release cycles/s / leasetop v1's UPSERT+DELETE cycles/s (the baseline before issue 38)", num: "cycle", den: "v1-cycle", stat: "ops"},
		{name: "the seed's cycles/s / leasetop v1's cycles/s", num: "seed-cycle", den: "v1-cycle", stat: "ops"},
		{name: "renew ops/s / renew without trigger ops/s", num: "renew", den: "renew-notrigger", stat: "ops", op: ">=", limit: 0.9},
		{name: "a SQL caller's cycles/s, post-commit path (acquire_quiet ... notify_event) / the seed's cycles/s", num: "cycle-sql", den: "seed-cycle", stat: "ops"},
		{name: "a SQL caller's cycles/s, plain calls (NOTIFY in the commit) / the seed's cycles/s", num: "cycle-plain", den: "seed-cycle", stat: "ops"},
		{name: "a SQL caller's cycles/s, post-commit path / plain calls", num: "cycle-sql", den: "cycle-plain", stat: "ops"},
		{name: "renew ops/s (Store.Renew's call) / the seed's per-key UPDATE ops/s", num: "renew", den: "seed-renew", stat: "ops", op: ">=", limit: 0.8},
		{name: "server CPU per acquire+release cycle, the library's / the seed's", num: "cycle", den: "seed-cycle", stat: "server-us"},
		{name: "the lean floor's cycles/s / the seed's", num: "floor-cycle", den: "seed-cycle", stat: "ops"},
		{name: "acquire+release cycles/s / the lean floor's", num: "cycle", den: "floor-cycle", stat: "ops"},
		{name: "server CPU per cycle, the lean floor's / the seed's", num: "floor-cycle", den: "seed-cycle", stat: "server-us"},
		{name: "server CPU per renewal, Store.Renew's call / the seed's per-key UPDATE", num: "renew", den: "seed-renew", stat: "server-us"},
		{name: "handoff p50, NOTIFY wake-up", num: "handoff-notify", stat: "p50", op: "<=", limit: 5},
		{name: "takeover after a dead holder's expiry p50", num: "takeover", stat: "p50", op: "<=", limit: 30},
		{name: "takeover after a dead holder's expiry max", num: "takeover", stat: "max", op: "<=", limit: 100},
		{name: "event propagation p99 at 1000/s, to the monitor's feed", num: "propagation-1000", stat: "p99", op: "<=", limit: 10},
		{name: "monitor snapshot load", num: "monitor-load", stat: "p50", op: "<=", limit: 1000},
		{name: "monitor resident memory, 1000 transitions/s", num: "monitor-active", stat: "rss", op: "<=", limit: 150},
		{name: "monitor frame render p50", num: "monitor-frame", stat: "p50", op: "<=", limit: 5},
		{name: "monitor CPU while nothing changes, % of one core", num: "monitor-idle", stat: "cpu", op: "<=", limit: 3},
		{name: "timeline open, t to the lanes' first frame p99", num: "timeline-open", stat: "p99", op: "<=", limit: 100},
		{name: "timeline scrub step, ← to the next frame with who held what p99", num: "timeline-scrub", stat: "p99", op: "<=", limit: 100},
		{name: "timeline next event, n to the next frame with who held what p99", num: "timeline-next", stat: "p99", op: "<=", limit: 100},
		{name: "monitor CPU with the timeline open, nothing changes, % of one core", num: "timeline-idle", stat: "cpu", op: "<=", limit: 3},
		{name: "monitor resident memory with the timeline open", num: "timeline-idle", stat: "rss", op: "<=", limit: 150},
		{name: "exporter scrape p99, 100,000 leases and 1000 transitions/s", num: "exporter-scrape", stat: "p99", op: "<=", limit: 50},
		{name: "exporter resident memory, 1000 transitions/s", num: "exporter-active", stat: "rss", op: "<=", limit: 150},
		{name: "event propagation p99 at 1000/s, monitor's feed polling every 250ms", num: "propagation-poll-1000", stat: "p99", op: "<=", limit: 300},
		{name: "events missed or received twice at 1000/s, polling", num: "propagation-poll-1000", stat: "lost", op: "<=", limit: 0},
		{name: "keep-alive of 100 leases in one call, renewals/s per lease / the seed's per-key UPDATE", num: "keepalive-100", den: "keepalive-seed", stat: "ops", op: ">=", limit: 10},
		{name: "keep-alive of 1000 leases in one call, renewals/s per lease / the seed's per-key UPDATE", num: "keepalive-1000", den: "keepalive-seed", stat: "ops", op: ">=", limit: 20},
		{name: "server CPU per renewal, Store.Renew one by one / 100 leases in one call", num: "keepalive-renew", den: "keepalive-100", stat: "server-us", op: ">=", limit: 10},
		{name: "server CPU per renewal, Store.Renew one by one / 1000 leases in one call", num: "keepalive-renew", den: "keepalive-1000", stat: "server-us", op: ">=", limit: 10},
		{name: "acquire+release cycles/s through PgBouncer / direct", num: "pooler", den: "pooler-direct", stat: "ops"},
		{name: "acquire+release p50 through PgBouncer / direct", num: "pooler", den: "pooler-direct", stat: "p50"},
		{name: "idle poll at 100,000 leases, server time p50", num: "poll-cost-server", stat: "p50"},
		{name: "idle catch-up read of a listening feed at 100,000 leases, server time p50", num: "listen-cost-server", stat: "p50"},

		{name: "timeline open p50 / the main table's frame p50", num: "timeline-open", den: "timeline-main-frame", stat: "p50"},
		{name: "timeline scrub step p50 / the main table's frame p50", num: "timeline-scrub", den: "timeline-main-frame", stat: "p50"},
		{name: "timeline frame p50 / the main table's frame p50", num: "timeline-frame", den: "timeline-main-frame", stat: "p50"},
		{name: "timeline database reads per open or scrub step p50", num: "timeline-db", stat: "p50"},
		{name: "timeline open p50 / monitor snapshot load p50", num: "timeline-open", den: "monitor-load", stat: "p50"},

		{name: "acquire without trigger p50 / plain UPSERT p50 (the function's cost)", num: "acquire-notrigger", den: "upsert", stat: "p50"},
		{name: "acquire p50 / acquire without trigger p50 (the trigger's cost)", num: "acquire", den: "acquire-notrigger", stat: "p50"},
		{name: "acquire with event row, no NOTIFY p50 / acquire without trigger p50 (the event row's cost)", num: "acquire-eventonly", den: "acquire-notrigger", stat: "p50"},
		{name: "acquire p50 / acquire with event row, no NOTIFY p50 (NOTIFY's cost)", num: "acquire", den: "acquire-eventonly", stat: "p50"},
		{name: "acquire with event row, no NOTIFY p50 / plain UPSERT p50", num: "acquire-eventonly", den: "upsert", stat: "p50"},
		{name: "acquire ops/s / acquire without trigger ops/s", num: "acquire", den: "acquire-notrigger", stat: "ops"},
		{name: "acquire ops/s / plain UPSERT ops/s", num: "acquire", den: "upsert", stat: "ops"},
		{name: "acquire of a free key p50 / plain UPSERT p50", num: "acquire-fresh", den: "upsert", stat: "p50"},
		{name: "acquire of a free key p50 / the seed's UPSERT p50", num: "acquire-fresh", den: "seed-upsert", stat: "p50"},
		{name: "release p50 / the seed's DELETE p50", num: "release", den: "seed-delete", stat: "p50"},
		{name: "contended acquire p50 / contended UPSERT p50", num: "acquire-contended", den: "upsert-contended", stat: "p50"},
		{name: "renew p50 / renew without trigger p50", num: "renew", den: "renew-notrigger", stat: "p50"},
		{name: "renew with notify_renewals ops/s / renew without trigger ops/s", num: "renew-notify", den: "renew-notrigger", stat: "ops"},
		{name: "plain UPSERT p50 / SELECT 1 p50", num: "upsert", den: "select1", stat: "p50"},
		{name: "advisory lock p50 / SELECT 1 p50", num: "advisory", den: "select1", stat: "p50"},
		{name: "acquire p50 / advisory lock p50", num: "acquire", den: "advisory", stat: "p50"},
		{name: "handoff p50, polling every 100ms / NOTIFY", num: "handoff-poll-100ms", den: "handoff-notify", stat: "p50"},
		{name: "handoff p50, polling every 1s / NOTIFY", num: "handoff-poll-1s", den: "handoff-notify", stat: "p50"},
		{name: "event propagation p99 at 100/s, to the monitor's feed", num: "propagation-100", stat: "p99"},
		{name: "exporter CPU at 1000 transitions/s, % of one core", num: "exporter-active", stat: "cpu"},
		{name: "exporter CPU at 1000 transitions/s / monitor CPU at the same load", num: "exporter-active", den: "monitor-active", stat: "cpu"},
		{name: "exporter CPU while nothing changes, % of one core", num: "exporter-idle", stat: "cpu"},
		{name: "event propagation p99 at 1000/s, monitor's feed / bare listener", num: "propagation-1000", den: "propagation-1000-listener", stat: "p99"},
		{name: "keep-alive, renewals/s per lease: Store.Renew one by one / the seed's per-key UPDATE", num: "keepalive-renew", den: "keepalive-seed", stat: "ops"},
		{name: "keep-alive, renewals/s per lease: 1 lease per renew_many call / the seed's per-key UPDATE", num: "keepalive-1", den: "keepalive-seed", stat: "ops"},
		{name: "keep-alive, renewals/s per lease: 100 in one call / Store.Renew one by one", num: "keepalive-100", den: "keepalive-renew", stat: "ops"},
		{name: "keep-alive, renewals/s per lease: 1000 in one call / Store.Renew one by one", num: "keepalive-1000", den: "keepalive-renew", stat: "ops"},
		{name: "server CPU per renewal, the seed's per-key UPDATE / 1000 leases in one call", num: "keepalive-seed", den: "keepalive-1000", stat: "server-us"},
		{name: "server CPU per renewal of Store.Renew one by one", num: "keepalive-renew", stat: "server-us"},
		{name: "server CPU per renewal, 1000 leases in one call", num: "keepalive-1000", stat: "server-us"},
	}
}

// stairComparisons are the staircase's ratios: each step's cycles/s and
// server CPU per cycle against the seed's.
func stairComparisons() []comparison {
	var out []comparison
	for _, st := range stairs[1:] {
		out = append(out,
			comparison{name: "staircase, " + st.name + ": cycles/s / the seed's", num: st.name, den: "seed-cycle", stat: "ops"},
			comparison{name: "staircase, " + st.name + ": server CPU per cycle / the seed's", num: st.name, den: "seed-cycle", stat: "server-us"})
	}
	return out
}

// ratios computes every comparison whose results are present, with the
// targets of a run of leases live leases (forLeases). A comparison whose
// workload was not run is left out; one whose workload failed or completed
// nothing is kept, with the error and, when it has a target, not met: a
// target must not vanish because its workload broke.
func ratios(results []Result, leases int) []Ratio {
	byName := map[string]Result{}
	for _, r := range results {
		byName[r.Name] = r
	}
	var out []Ratio
	for _, c := range forLeases(append(comparisons(), stairComparisons()...), leases) {
		num, ok := byName[c.num]
		den, denOK := byName[c.den]
		if !ok || (c.den != "" && !denOK) {
			continue
		}
		ratio := Ratio{Name: c.name, Unit: unitOf(c.stat)}
		if c.den != "" {
			ratio.Unit = "x"
		}
		if c.op != "" {
			ratio.Target = fmt.Sprintf("%s %g%s", c.op, c.limit, unitSuffix(ratio.Unit))
		}
		ratio.Error = unusable(num, c.stat)
		if ratio.Error == "" && c.den != "" {
			if ratio.Error = unusable(den, c.stat); ratio.Error == "" && stat(den, c.stat) == 0 {
				ratio.Error = den.Name + ": measured 0"
			}
		}
		if ratio.Error != "" {
			if c.op != "" {
				met := false
				ratio.Met = &met
			}
			out = append(out, ratio)
			continue
		}
		ratio.Value = stat(num, c.stat)
		if c.den != "" {
			ratio.Value /= stat(den, c.stat)
		}
		if c.op != "" {
			met := ratio.Value <= c.limit
			if c.op == ">=" {
				met = ratio.Value >= c.limit
			}
			ratio.Met = &met
		}
		out = append(out, ratio)
	}
	return out
}

// unusable says why r gives no value of stat: it failed, or it completed
// no operation (what cpu and rss measure needs none); "" when it gives one.
func unusable(r Result, stat string) string {
	switch {
	case r.Error != "":
		return r.Name + " failed: " + r.Error
	case r.Ops == 0 && stat != "cpu" && stat != "rss":
		return r.Name + ": no operation completed"
	}
	return ""
}

func stat(r Result, name string) float64 {
	switch name {
	case "p50":
		return r.P50ms
	case "p99":
		return r.P99ms
	case "cpu":
		return r.CPUPct
	case "rss":
		return r.RSSMB
	case "max":
		return r.MaxMs
	case "lost":
		return float64(r.Missed + r.Repeated)
	case "server-us":
		return r.ServerCPUus
	default:
		return r.OpsPerSec
	}
}

// unitOf is the unit of an absolute value of stat.
func unitOf(stat string) string {
	switch stat {
	case "cpu":
		return "%"
	case "rss":
		return "MB"
	case "lost":
		return "events"
	case "server-us":
		return "us"
	default:
		return "ms"
	}
}

func unitSuffix(unit string) string {
	if unit == "x" || unit == "%" {
		return unit
	}
	return " " + unit
}
