package bench

// fleetLeases is the lease count from which the monitor's and the
// exporter's figures are judged against the targets for a million
// leases (fleetComparisons) instead of the 100,000-lease ones.
const fleetLeases = 1_000_000

// fleetComparisons are the targets for the monitor and the exporter
// at a million live leases. Each replaces the 100,000-lease target on the
// same figure (num and stat), where there is one.
func fleetComparisons() []comparison {
	const at = "1,000,000 leases: "
	return []comparison{
		{name: at + "monitor first picture", num: "monitor-load", stat: "p50", op: "<=", limit: 3000},
		{name: at + "monitor resident memory, 1000 transitions/s", num: "monitor-active", stat: "rss", op: "<=", limit: 300},
		{name: at + "monitor CPU while nothing changes, % of one core", num: "monitor-idle", stat: "cpu", op: "<=", limit: 3},
		{name: at + "monitor frame render p50", num: "monitor-frame", stat: "p50", op: "<=", limit: 5},
		{name: at + "monitor sort key answer p99", num: "monitor-sort", stat: "p99", op: "<=", limit: 100},
		{name: at + "monitor filter key answer p99", num: "monitor-filter", stat: "p99", op: "<=", limit: 100},
		{name: at + "exporter scrape p99, 1000 transitions/s", num: "exporter-scrape", stat: "p99", op: "<=", limit: 100},
		{name: at + "exporter resident memory, 1000 transitions/s", num: "exporter-active", stat: "rss", op: "<=", limit: 300},
	}
}

// forLeases returns cs as judged at a run of leases live leases: from
// fleetLeases on, the fleet's targets first, in place of the ones they
// replace.
func forLeases(cs []comparison, leases int) []comparison {
	if leases < fleetLeases {
		return cs
	}
	fleet := fleetComparisons()
	replaced := map[[2]string]bool{}
	for _, c := range fleet {
		replaced[[2]string{c.num, c.stat}] = true
	}
	out := fleet
	for _, c := range cs {
		if c.den != "" || c.op == "" || !replaced[[2]string{c.num, c.stat}] {
			out = append(out, c)
		}
	}
	return out
}
