package data

import "time"

// The history's reads, for the plan test and the benchmark.
var (
	EventsBetweenQuery = eventsBetweenQuery
	OwnersQuery        = func(at time.Time, f HistoryFilter) (string, []any) { return ownersQuery(at, f) }
)
