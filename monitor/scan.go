package monitor

// ScanInstants calls fn once for every lease with its expiry and its
// acquisition (unix nanoseconds on the server clock) and its account's
// number (AccountName): all the exporter's gauges need, read straight from
// the State's columns, so a scrape of a million leases is one pass over
// some twenty megabytes and the exporter keeps no copy of its own.
func (s *State) ScanInstants(fn func(expires, acquired int64, account uint32)) {
	t := &s.leases
	for i, f := range t.flags {
		if f&slotLive != 0 {
			fn(t.expires[i], t.acquired[i], t.account[i])
		}
	}
}

// Accounts is one more than the largest account number ScanInstants may
// give: the length of an array indexed by them.
func (s *State) Accounts() int { return len(s.leases.accts.names) }

// AccountName returns the account id numbered n ("" for a number no lease
// has now).
func (s *State) AccountName(n uint32) string { return s.leases.accts.name(n) }
