package data

import "github.com/jackc/pgx/v5"

// customPlan makes a history read by time (EventsBetween, OwnersAt) run as
// an unnamed statement, planned each time with its values: a prepared
// statement's generic plan, which PostgreSQL switches to after five runs,
// cannot prune lease.event's daily partitions by the read's times. It then
// reads every partition's index (a Merge Append, including the DEFAULT
// partition) where the custom plan reads the partitions the range covers, in
// order, and stops at the first row (TestHistoryReadsPlanEachTime).
func customPlan(args []any) []any {
	return append([]any{pgx.QueryExecModeExec}, args...)
}
