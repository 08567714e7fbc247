package data

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// Activity is what a server process is doing, as another session sees it:
// the lock it waits for (pg_stat_activity) and how far an index build has
// gone (pg_stat_progress_create_index), the long steps of a migration or a
// partition's creation that PostgreSQL counts. A read that PostgreSQL does
// not count (a partition's bound checked against its rows) shows as time
// only.
type Activity struct {
	// Waiting is the kind of lock it waits for ("relation", "advisory",
	// "transactionid"), "" when it waits for none.
	Waiting string
	// Building is the table an index is being built on, "" when none;
	// Phase, Done and Total say how far, in Unit ("blocks" or "tuples", as
	// PostgreSQL counts the phase; Total 0 when it does not).
	Building    string
	Phase       string
	Done, Total int64
	Unit        string
}

// activityEvery is how often a watcher reads the activity (a variable for
// the tests).
var activityEvery = 250 * time.Millisecond

// activitySQL reads a process's Activity. Every name is qualified: the
// watcher may run as a migrating superuser on a database whose other roles
// set its search_path.
const activitySQL = `SELECT CASE WHEN a.wait_event_type OPERATOR(pg_catalog.=) 'Lock' THEN a.wait_event ELSE '' END,
	coalesce(p.relid::pg_catalog.regclass::pg_catalog.text, ''), coalesce(p.phase, ''),
	coalesce(CASE WHEN p.tuples_total OPERATOR(pg_catalog.>) 0 THEN p.tuples_done ELSE p.blocks_done END, 0),
	coalesce(CASE WHEN p.tuples_total OPERATOR(pg_catalog.>) 0 THEN p.tuples_total ELSE p.blocks_total END, 0),
	CASE WHEN p.pid IS NULL THEN '' WHEN p.tuples_total OPERATOR(pg_catalog.>) 0 THEN 'tuples' ELSE 'blocks' END
	FROM pg_catalog.pg_stat_activity a
	LEFT JOIN pg_catalog.pg_stat_progress_create_index p ON p.pid OPERATOR(pg_catalog.=) a.pid
	WHERE a.pid OPERATOR(pg_catalog.=) $1`

// watchActivity calls fn with process pid's Activity every activityEvery,
// read on a connection of its own made from cfg, until ctx ends. It stops
// quietly when it cannot connect or read: the work it watches goes on, its
// progress just shows less.
func watchActivity(ctx context.Context, cfg *pgx.ConnConfig, pid uint32, fn func(Activity)) {
	cfg = cfg.Copy()
	cfg.RuntimeParams["application_name"] = "leasetop progress"
	conn, err := Connect(ctx, cfg)
	if err != nil {
		return
	}
	defer conn.Close(context.WithoutCancel(ctx))
	t := time.NewTicker(activityEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		var a Activity
		err := conn.QueryRow(ctx, activitySQL, pid).Scan(&a.Waiting, &a.Building, &a.Phase, &a.Done, &a.Total, &a.Unit)
		if err != nil {
			return
		}
		fn(a)
	}
}
