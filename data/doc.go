// Package data is leasetop's only door to PostgreSQL: the lease protocol's
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
// A program that uses the lease library (package lease) needs from this
// package only what opens the store and writes under a fence, and these
// names keep their meaning across leasetop's releases (new fields and
// functions may come; none of these is removed or changes what it does
// without a major version):
//
//   - opening: Open, OpenWith, Options, New, Store, Store.Pool, Store.Close,
//     Store.CheckSchema, ParsePoolConfig, ParseConnConfig, Connect, Querier;
//   - statements of the program's own that must resolve names in
//     pg_catalog only: Store.Pinned, Pinned;
//   - migrating in code: Migrate, MigrateWith, MigrateOptions,
//     MigrateBlockedError, ForeignError, SchemaVersion;
//   - the protocol's values: Key, Lease, Grant, PublicRunID, ValidateKey,
//     ValidateHolder, ValidateReason, ValidateTTL, MaxIDBytes,
//     MaxHolderBytes, MaxReasonBytes, MaxTTL;
//   - a fenced write of the program's own: BoundTx, BoundSQLTx, CheckFence,
//     CheckFenceSQL, OutlivedBound;
//   - the errors and what they mean: ErrHeld (*HeldError), ErrNotHeld,
//     ErrInvalid (*InputError), ErrSchema (*SchemaError), ErrPermission
//     (*PermissionError), ErrReadOnly, *ConnectError, *DSNError,
//     *PoolerError, *SearchPathError (deprecated: no longer returned),
//     Permanent, NotApplied and Translate, and *NotifyError (a
//     notification not sent after its transition committed, given to the
//     hook the store's options name for it);
//   - the settings of a lease.Client's listener (lease.Config.Listener):
//     ListenerConfig.
//
// Everything else is exported for leasetop's own packages and may change
// in any release: the protocol's calls that package lease wraps (Acquire,
// Renew, RenewMany with ErrLocked, Release: use lease.Client), the operator's
// (ForceRelease and its variants, ClearQueue and ClearTicket, Lockers,
// Owner, MaintainEvents and MaintainBusyError), ConnectPinned (the
// benchmark's baselines), and what the monitor,
// the exporter, the CLI, the demo and the benchmark read (Snapshot, Sync,
// Clock, Recovery, Store.Standby, Changed, the Events methods, Event and Kind, the
// Listener and its states, NotifyQueueUsage, NotifyRenewals,
// SetNotifyRenewals). It stays in this package, not under internal/,
// because the public packages monitor and ui are built of its types
// (monitor.Batch holds a *Sync, a *Event and a *Snapshot; ui shows
// data.Lease), and because the reads are Store's methods over its pool,
// call options and translate: moving them out would mean exporting those
// instead. What only tests need lives in internal/testkit/leaserow (writes to the
// lease table as its owner) and export_test.go.
package data
