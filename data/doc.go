// Package data is leasetop's only door to PostgreSQL: the lease protocol's
// functions (Acquire, Renew, Release, ForceRelease), reads of the live leases
// and the event history (Snapshot, Events, EventsFor), the schema
// migration, decoding of lease_events notifications and a Listener that
// delivers them, reconnecting and resyncing as needed.
//
// All writes go through the SQL functions in schema lease (see sql/); this
// package translates their outcomes and the driver's errors into typed errors
// once, at the boundary: ErrHeld (with the current holder), ErrNotHeld,
// ErrInvalid, ErrSchema, ErrPermission, *ConnectError and *DSNError, and
// Permanent and NotApplied tell a retry loop what an error means. Callers
// match them with errors.Is and errors.As; no other package looks at SQLSTATE
// codes or pgx's error types.
//
// Through a transaction pooler nothing lives in a session: Open finds a
// pooler and uses a query mode without long-lived prepared statements
// (pooler.go), and what a pooler refuses is a *PoolerError. A Listener
// LISTENs on its own connection (Options.ListenDSN) or, where that cannot
// work (a hot standby, a pooler without a listen DSN, a pooled LISTEN that
// hears nothing), polls
// lease.event by id and delivers rows (poll.go).
//
// Expiry is decided by the database clock. A Snapshot carries a Clock, the
// server's time sampled in the same query with the local monotonic time around
// it, so a program can tell the server's "now" without trusting its own wall
// clock.
package data
