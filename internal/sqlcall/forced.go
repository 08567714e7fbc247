package sqlcall

import "github.com/jackc/pgx/v5/pgtype"

// ForceReleaseQuiet is the operator's forced release as the Go library makes
// it, like AcquireQuiet and ReleaseQuiet: the call's transaction opts out of
// the trigger's NOTIFY, and the notification follows its commit. A
// transaction that notifies fails at its commit when PostgreSQL's NOTIFY
// queue is full (SQLSTATE 54000), and any role that may connect can fill it:
// a listener that keeps a transaction open holds every later notification
// in the queue (8 GB in PostgreSQL 15, about a minute of pg_notify calls).
// The forced release, an operator's way out when something is stuck, then
// commits anyway; only its notification fails, and listeners read the event
// from lease.event (data.ListenerConfig.CatchUp).
//
// The call takes ForceRelease's parameters and returns its boolean. The
// notification's parameters are account, session and the public run id the
// call compared (NULL: whoever held it); it sends the newest force_released
// event of the key's last four that this login recorded for that run. When
// the call released nothing it may repeat an earlier one of those, which
// consumers drop by its event id, as they drop every repeated id. It reads
// the partitions around now only (nearNow).
var ForceReleaseQuiet = QuietCall{
	Setup: `SELECT ` + OptOut,
	Call: Statement{ForceRelease, []uint32{
		pgtype.TextOID, pgtype.TextOID, pgtype.UUIDOID, pgtype.TextOID}},
	Notify: Statement{`SELECT pg_catalog.pg_notify('lease_events', pg_catalog.row_to_json(e)::pg_catalog.text)
  FROM (SELECT * FROM lease.event
         WHERE account_id OPERATOR(pg_catalog.=) $1 AND session_id OPERATOR(pg_catalog.=) $2
           AND ` + nearNow + `
         ORDER BY id DESC LIMIT 4) e
 WHERE e.kind OPERATOR(pg_catalog.=) 'force_released' AND e.actor OPERATOR(pg_catalog.=) SESSION_USER
   AND ($3::pg_catalog.uuid IS NULL OR e.run_id OPERATOR(pg_catalog.=) $3)
 ORDER BY e.id DESC LIMIT 1`, keyRun},
}
