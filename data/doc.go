// Package data is what a program needs from leasetop's door to PostgreSQL:
// opening the store, migrating in code, the protocol's values, a fenced
// write of the program's own, and the errors, each saying what it means.
// The calls that own a lease are package lease's (lease.New takes the
// *Store this package opens).
//
// Every name here is the same name of internal/data, where leasetop
// implements them: a type is an alias (a value of one is a value of the
// other), a function calls its twin. Their fields and methods are
// documented there: go doc github.com/leasetop/leasetop/internal/data.Key.
//
// All writes go through the SQL functions in schema lease; this package
// translates their outcomes and the driver's errors into typed errors once,
// at the boundary: ErrHeld (with the current holder), ErrNotHeld,
// ErrInvalid, ErrSchema, ErrPermission, *ConnectError and *DSNError, and
// Permanent and NotApplied tell a retry loop what an error means. Match
// them with errors.Is and errors.As; Translate does the same for a
// statement of the program's own.
//
// Through a transaction pooler nothing lives in a session: Open finds a
// pooler and uses a query mode without long-lived prepared statements, and
// what a pooler refuses is a *PoolerError. Every name a statement of the
// store resolves means pg_catalog's or lease's object, whatever the
// session's search_path; Store.Pinned runs a program's statements the same
// way. The session's own search_path is left alone for a program's SQL on
// Store.Pool.
//
// Expiry is decided by the database clock: a Lease's expiry is the
// server's time, and a Clock tells the server's "now" without trusting the
// local wall clock.
//
// # What is public
//
// These names keep their meaning across leasetop's releases (new fields
// and functions may come; none of these is removed or changes what it does
// without a major version):
//
//   - opening: Open, OpenWith, Options, New, Store, Store.Pool, Store.Close,
//     Store.CheckSchema, ParsePoolConfig, ParseConnConfig, Connect, Querier;
//   - statements of the program's own that must resolve names in
//     pg_catalog only: Store.Pinned, Pinned;
//   - migrating in code: Migrate, MigrateWith, MigrateOptions,
//     MigrateProgress, MigrateBlockedError, ForeignError, SchemaVersion;
//   - the protocol's values: Key, Lease, Grant, PublicRunID, ValidateKey,
//     ValidateHolder, ValidateReason, ValidateTTL, MaxIDBytes,
//     MaxHolderBytes, MaxReasonBytes, MaxTTL;
//   - a fenced write of the program's own: BoundTx, BoundSQLTx, CheckFence,
//     CheckFenceSQL, OutlivedBound;
//   - the errors and what they mean: ErrHeld (*HeldError), ErrAtLimit
//     (*LimitError, SlotHolder), ErrNotHeld,
//     ErrInvalid (*InputError), ErrSchema (*SchemaError), ErrPermission
//     (*PermissionError), ErrReadOnly, *ConnectError, *DSNError,
//     *PoolerError, *SearchPathError (deprecated: no longer returned),
//     Permanent, NotApplied and Translate, the inbox's ErrMessageKeyReused,
//     ErrInboxFull and ErrInboxShareFull, and *NotifyError (a
//     notification not sent after its transition committed, given to the
//     hook the store's options name for it);
//   - the settings of a lease.Client's listener (lease.Config.Listener):
//     ListenerConfig.
//
// # What the public packages hand out
//
// The public packages lease, monitor and ui take and return values of
// leasetop's own reads, so a program can name them here; they follow
// leasetop's tools and may gain fields or change in any release:
//
//   - the history: Event, Kind, Kinds and its constants;
//   - the live leases and the clock: Snapshot, Sync, Recovery, Clock,
//     NewClock;
//   - the listener behind a monitor: Listener, ListenerState,
//     ListenerStatus and its constants, PollReason, PollCause and its
//     constants;
//   - queues and asks: Ticket, PendingAsk, AskOutcome and its constants,
//     MaxAskTTL, MaxAttachmentBytes, QueueLimit, QueueShare;
//   - the operator's reads: Locker, Blocker, SessionsQuery;
//   - the inbox: MessageKind, MessageSteer, MessageCancel, MessageState,
//     MessageWaiting, MessageDelivered, MessageAcked, MessageExpired,
//     MessageStatus, Inbox, MaxMessageBytes, MessageLimit.
//
// Everything else leasetop exports for its own packages lives in
// internal/data; what only tests need, in its export_test.go and in
// internal/testkit.
package data
