// Package data implements leasetop's only door to PostgreSQL: the lease protocol's
// functions (Acquire, Renew, Release, ForceRelease), reads of the live leases
// and the event history (Snapshot, Events, EventsFor), the schema
// migration, decoding of lease_events notifications and a Listener that
// delivers them, reconnecting and resyncing as needed, never one that names
// an event its consumer's snapshot holds already; its consumer reads them
// back (Listener.ReadBack) before it acts.
//
// All writes go through the SQL functions in schema lease (see sql/); this
// package translates their outcomes and the driver's errors into typed errors
// once, at the boundary: ErrHeld (with the current holder), ErrNotHeld,
// ErrInvalid, ErrSchema, ErrPermission, *ConnectError and *DSNError, and
// Permanent and NotApplied tell a retry loop what an error means. Callers
// match them with errors.Is and errors.As; no other package reads SQLSTATE
// codes (translate.go), and only internal/pgerr, for this package and
// internal/sqlcall below it, looks for pgx's server error.
//
// Through a transaction pooler nothing lives in a session: Open finds a
// pooler and uses a query mode without long-lived prepared statements
// (pooler.go), and what a pooler refuses is a *PoolerError. A Listener
// LISTENs on its own connection (Options.ListenDSN) or, where that cannot
// work (a hot standby, a pooler without a listen DSN, a pooled LISTEN that
// hears nothing), polls
// lease.event by id and delivers rows (poll.go).
//
// Every name a statement of this package resolves means pg_catalog's or
// lease's object, whatever the session's search_path (which a database's or
// a role's owner sets, and where they can plant objects that beat
// PostgreSQL's own): the hot path's statements name every function,
// operator and type with its schema, and the rest run through Pinned, in a
// transaction whose search_path is pinned before they are parsed
// (pinned.go). The session's own search_path is left alone for a
// program's SQL on Pool.
//
// Expiry is decided by the database clock. A Snapshot carries a Clock, the
// server's time sampled in the same query with the local monotonic time around
// it, so a program can tell the server's "now" without trusting its own wall
// clock.
//
// # What is public
//
// Package data (the module's root data/) is this package's public face: it
// forwards the names a program may use, with aliases and calls, and its
// doc lists which of them keep their meaning across releases. Everything
// else here is for leasetop's own packages (lease, monitor, ui and the
// commands import this package, not the face) and may change in any
// release. A new name a program needs gets a forwarding line in data/ and
// a place in its doc's lists (TestPublicNamesExist, TestFaceListsEveryName).
// What only tests need lives in export_test.go and internal/testkit.
package data
