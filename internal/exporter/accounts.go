package exporter

import (
	"cmp"
	"slices"
)

// OtherAccount is the account label of the leases of every account beyond
// Config.MaxAccounts. An account whose id is literally "other" is counted
// there too, so no two series ever share a label set.
const OtherAccount = "other"

// accountCounts is one account's lease gauges.
type accountCounts struct {
	name   string
	counts counts
}

// topAccounts returns, of the accounts names with the lease counts per, the
// limit accounts with the most held leases (then the most expired, then by
// name, so the choice is stable between scrapes), and last one "other" entry
// with the sum of the rest (zero when none are left).
func topAccounts(name func(uint32) string, per []counts, limit int) []accountCounts {
	all := make([]accountCounts, 0, len(per))
	var other counts
	for i, c := range per {
		switch {
		case c == counts{}: // an account seen since the last resync that has no lease now
		case name(uint32(i)) == OtherAccount:
			other.add(c)
		default:
			all = append(all, accountCounts{name: name(uint32(i)), counts: c})
		}
	}
	slices.SortFunc(all, func(a, b accountCounts) int {
		return cmp.Or(
			cmp.Compare(b.counts.held, a.counts.held),
			cmp.Compare(b.counts.expired, a.counts.expired),
			cmp.Compare(a.name, b.name))
	})
	if len(all) > limit {
		for _, a := range all[limit:] {
			other.add(a.counts)
		}
		all = all[:limit]
	}
	return append(all, accountCounts{name: OtherAccount, counts: other})
}
