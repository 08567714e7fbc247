package sqlcall

import "github.com/jackc/pgx/v5"

// Secret returns args for a call that carries a run's secret id on a
// connection whose default query mode is mode: as they are, or, for the
// simple protocol, behind a query mode that keeps them bind parameters. The simple
// protocol writes the arguments into the query text, which
// pg_stat_activity.query shows to every session of the same login and to
// pg_read_all_stats: whoever read a run id there could release its lease.
// Describe-then-execute takes one more round trip, and works through
// transaction poolers (unnamed statements).
func Secret(mode pgx.QueryExecMode, args ...any) []any {
	if mode != pgx.QueryExecModeSimpleProtocol {
		return args
	}
	return append([]any{pgx.QueryExecModeDescribeExec}, args...)
}
