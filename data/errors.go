package data

import (
	impl "github.com/leasetop/leasetop/internal/data"
)

// Errors returned by Store methods; match them with errors.Is.
var (
	// ErrHeld: another run holds an unexpired lease. The error is a *HeldError
	// that names the holder.
	ErrHeld = impl.ErrHeld
	// ErrNotHeld: the run does not hold an unexpired lease (Renew, fence checks).
	ErrNotHeld = impl.ErrNotHeld
	// ErrInvalid: an argument is out of its documented range. The error is an
	// *InputError or carries the server's message.
	ErrInvalid = impl.ErrInvalid
	// ErrSchema: the database lacks the lease schema or has another version.
	ErrSchema = impl.ErrSchema
)

// ErrPermission: the login role lacks a privilege the statement needs
// (SQLSTATE 42501, insufficient_privilege). The error is a *PermissionError.
var ErrPermission = impl.ErrPermission

// ErrReadOnly: the server runs no writes (SQLSTATE 25006): a hot standby, or
// a read-only transaction. Writes need the primary.
var ErrReadOnly = impl.ErrReadOnly

// HeldError is the ErrHeld returned by Acquire: who holds the lease, and for
// how long still (on the database clock, when it was read).
type HeldError = impl.HeldError

// InputError is an ErrInvalid that names the bad argument.
type InputError = impl.InputError

// SchemaError is the ErrSchema returned by Open and CheckSchema.
type SchemaError = impl.SchemaError

// PermissionError is the ErrPermission the server raised.
type PermissionError = impl.PermissionError

// ConnectError: no connection could be made: it was refused or timed out, or
// the server turned the login away (a wrong password, no such database). It
// says where and as whom, never with the password.
type ConnectError = impl.ConnectError

// DSNError: the connection string could not be parsed. Its text never
// contains the string, which may hold a password.
type DSNError = impl.DSNError

// PoolerError: a pooler between leasetop and PostgreSQL (PgBouncer, RDS
// Proxy, ...) refused what the connection asked of it, or the connection
// asked for something that only works on a session of its own. Its text is
// one line: what happened, and what to change.
type PoolerError = impl.PoolerError

// SearchPathError was a store with Options.PinSearchPath refusing a
// session, reached through a pooler that would not take the pinned
// search_path, whose search_path put schemas before pg_catalog.
//
// Deprecated: no store returns it since schema version 6. Every statement
// of a store resolves names in pg_catalog and lease whatever the session's
// search_path (see Pinned), through a pooler too, so such a session is
// served instead of refused.
type SearchPathError = impl.SearchPathError

// NotifyError is what Options.OnNotifyError is given when a call
// committed but the notification the store sends after its commit did not
// go out (the connection broke between the two, or the role may not send
// it). The transition, if the call made one, stands: it is in lease.event,
// where every listener finds it when it next catches up
// (ListenerConfig.CatchUp), only later than a notification would have
// told it.
type NotifyError = impl.NotifyError

// Permanent reports whether err will come back the same however often the
// call is retried: invalid input, a lease schema that is missing or at
// another version, a missing privilege, a connection string that does not
// parse, a login the server refuses, a statement it cannot run (SQLSTATE
// classes 28, 42, 3D and 3F), or a pooler that cannot run what the
// connection asks (a *PoolerError other than a limit reached).
//
// It says nothing about context errors: whether an ended deadline ends the
// work is the caller's decision, not the database's.
func Permanent(err error) bool {
	return impl.Permanent(err)
}

// NotApplied reports whether a failed call certainly changed nothing in the
// database: its input was refused before it was sent, the server raised an
// error (so the statement's transaction rolled back), or the driver failed
// before it sent anything. A lost reply, a timeout or a connection broken
// mid-statement is not: the statement may have committed.
func NotApplied(err error) bool {
	return impl.NotApplied(err)
}

// Translate applies this package's translation to an error from a statement
// the caller ran itself, on a connection from Connect or Store.Pool: the demo's
// own tables, the benchmark's scratch schema. Errors this package returns are
// translated already; translating twice changes nothing.
func Translate(err error) error {
	return impl.Translate(err)
}
