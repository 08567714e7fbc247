package data

import (
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/leasetop/leasetop/internal/pgerr"
)

// The driver's errors are translated here, once: every error this package
// returns has been through translate, so callers match them with errors.Is
// and errors.As (ErrPermission, *ConnectError, *DSNError, *PoolerError,
// Permanent, NotApplied) and never look at SQLSTATE codes or pgx's types. This file is
// the only place that knows what a SQLSTATE means; internal/pgerr finds the
// server's error in a chain, for this file and for internal/sqlcall below it.

// ErrPermission: the login role lacks a privilege the statement needs
// (SQLSTATE 42501, insufficient_privilege). The error is a *PermissionError.
var ErrPermission = errors.New("permission denied")

// ErrReadOnly: the server runs no writes (SQLSTATE 25006): a hot standby, or
// a read-only transaction. Writes need the primary.
var ErrReadOnly = errors.New("the server is read-only (a hot standby?): writes need the primary")

// PermissionError is the ErrPermission the server raised.
type PermissionError struct {
	// Message is the server's message, such as "permission denied for
	// function force_release": untrusted text.
	Message string
	err     error
}

// Error is the driver's text, unchanged.
func (e *PermissionError) Error() string { return e.err.Error() }

// Is makes errors.Is(err, ErrPermission) true.
func (e *PermissionError) Is(target error) bool { return target == ErrPermission }

// Unwrap returns the driver's error.
func (e *PermissionError) Unwrap() error { return e.err }

// ConnectError: no connection could be made: it was refused or timed out, or
// the server turned the login away (a wrong password, no such database). It
// says where and as whom, never with the password.
type ConnectError struct {
	Host     string
	Port     uint16 // 0 for a Unix socket path that names no port
	Database string
	User     string
	// Reason is the innermost cause, on one line: the server's message
	// (untrusted text), such as `password authentication failed for user
	// "u"`, or the system's, such as "connection refused". When several
	// addresses were tried, the first one's stands for them all.
	Reason string
	err    error
}

// Error is the driver's text, unchanged: it names the user and the database,
// not the password.
func (e *ConnectError) Error() string { return e.err.Error() }

// Unwrap returns the driver's error.
func (e *ConnectError) Unwrap() error { return e.err }

// DSNError: the connection string could not be parsed. Its text never
// contains the string, which may hold a password.
type DSNError struct {
	Reason string // what is wrong with it, in pgx's words
}

// Error says the URL is invalid and why.
func (e *DSNError) Error() string { return "invalid database URL: " + e.Reason }

// PoolerError: a pooler between leasetop and PostgreSQL (PgBouncer, RDS
// Proxy, ...) refused what the connection asked of it, or the connection
// asked for something that only works on a session of its own. Its text is
// one line: what happened, and what to change.
type PoolerError struct {
	// Message is the pooler's or the server's message: untrusted text.
	Message string
	// Fix says what to change.
	Fix string
	// transient: a limit of the pooler was reached; a retry may pass.
	transient bool
	err       error
}

// Error is the message and the fix.
func (e *PoolerError) Error() string { return e.Message + ": " + e.Fix }

// Unwrap returns the driver's error (a *ConnectError when the pooler refused
// the connection).
func (e *PoolerError) Unwrap() error { return e.err }

// poolerError returns the *PoolerError for a driver error that a pooler
// causes, nil for any other: prepared statements that did not outlive their
// transaction (42P05, 26000: a statement cache through a transaction
// pooler), and PgBouncer's refusals of a start-up parameter, of one client
// too many and of a query that waited too long for a server connection.
func poolerError(err error, pce *pgconn.ConnectError) *PoolerError {
	pgErr := pgerr.Server(err)
	if pgErr == nil {
		return nil
	}
	pe := &PoolerError{Message: pgErr.Message, err: err}
	if pce != nil {
		pe.err = newConnectError(pce, err)
	}
	switch {
	case pgErr.Code == "42P05" || pgErr.Code == "26000":
		pe.Fix = "the connection goes through a transaction pooler, which keeps no prepared statement past its transaction: " +
			"set default_query_exec_mode=cache_describe (or exec) in the connection string"
	case strings.HasPrefix(pgErr.Message, "unsupported startup parameter"):
		pe.Fix = "the pooler refuses this connection-string parameter: remove it from the connection string " +
			"(or add it to the pooler's ignore_startup_parameters)"
	case strings.HasPrefix(pgErr.Message, "no more connections allowed"):
		pe.Fix, pe.transient = "the pooler's client limit is reached: raise its max_client_conn or open fewer connections", true
	case pgErr.Message == "query_wait_timeout":
		pe.Fix, pe.transient = "the pooler had no free server connection in time: raise its default_pool_size (or query_wait_timeout)", true
	default:
		return nil
	}
	return pe
}

// statementError returns the server's error when err is one a statement
// raised (severity ERROR: the session lives on), as opposed to a lost
// connection, a refused login or a FATAL. Listen uses it to tell a LISTEN
// that cannot work (SQLSTATE 25006 on a standby) from a connection to retry.
func statementError(err error) (*pgconn.PgError, bool) {
	var pce *pgconn.ConnectError
	pgErr := pgerr.Server(err)
	if errors.As(err, &pce) || pgErr == nil || pgErr.Severity != "ERROR" {
		return nil, false
	}
	return pgErr, true
}

// Translate applies this package's translation to an error from a statement
// the caller ran itself, on a connection from Connect or Store.Pool: the demo's
// own tables, the benchmark's scratch schema. Errors this package returns are
// translated already; translating twice changes nothing.
func Translate(err error) error { return translate(err) }

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
	var (
		dsn    *DSNError
		pooler *PoolerError
	)
	if errors.Is(err, ErrInvalid) || errors.Is(err, ErrSchema) || errors.Is(err, ErrPermission) || errors.As(err, &dsn) {
		return true
	}
	if errors.As(err, &pooler) {
		return !pooler.transient
	}
	switch class(sqlstate(err)) {
	case "28", "42", "3D", "3F": // authorization, access or syntax, catalog, schema
		return true
	}
	return false
}

// NotApplied reports whether a failed call certainly changed nothing in the
// database: its input was refused before it was sent, the server raised an
// error (so the statement's transaction rolled back), or the driver failed
// before it sent anything. A lost reply, a timeout or a connection broken
// mid-statement is not: the statement may have committed.
func NotApplied(err error) bool {
	return errors.Is(err, ErrInvalid) || errors.Is(err, ErrSchema) || sqlstate(err) != "" || pgconn.SafeToRetry(err)
}

// translate maps the driver's errors onto this package's, once, at the
// boundary. A connection failure becomes a *ConnectError; SQLSTATE 22023
// (invalid_parameter_value, raised by the lease functions), 23514
// (check_violation), 22021 (invalid byte sequence) and 22P02 (invalid text
// representation) become ErrInvalid with the server's message; a missing
// schema, function or table ErrSchema; 42501 a *PermissionError; what a
// pooler refuses a *PoolerError (see poolerError); 25006 ErrReadOnly; LP001
// (lease.preempt's refusal) ErrNotPreemptible. Other errors pass
// unchanged. An error translated already is returned as it is.
func translate(err error) error {
	var (
		ce     *ConnectError
		perm   *PermissionError
		pooler *PoolerError
	)
	if err == nil || errors.As(err, &ce) || errors.As(err, &perm) || errors.As(err, &pooler) {
		return err
	}
	var pce *pgconn.ConnectError
	_ = errors.As(err, &pce)
	if pe := poolerError(err, pce); pe != nil {
		return pe
	}
	if pce != nil {
		return newConnectError(pce, err)
	}
	if pgErr := pgerr.Server(err); pgErr != nil {
		switch pgErr.Code {
		case "22023", "23514", "22021", "22P02":
			return fmt.Errorf("%w: %s", ErrInvalid, pgErr.Message)
		case "3F000", "42883", "42P01": // schema, function or table missing
			return &SchemaError{Want: currentVersion()}
		case "42501":
			return &PermissionError{Message: pgErr.Message, err: err}
		case "25006":
			return fmt.Errorf("%w: %s", ErrReadOnly, pgErr.Message)
		case "LP001": // lease.preempt: the holder declared that it must not be preempted
			return fmt.Errorf("%w: %s", ErrNotPreemptible, pgErr.Message)
		}
	}
	return err
}

// queueError is translate, with lease.enqueue's and renew_ticket's
// refusals as this package's errors: a full queue (SQLSTATE 54000)
// ErrQueueFull, a login's full share (LQ001) ErrQueueShareFull, a cleared
// ticket (LQ002) a *TicketClearedError, the last two with the server's
// message (whose share; who cleared it and why).
func queueError(err error) error {
	switch sqlstate(err) {
	case "54000":
		return ErrQueueFull
	case "LQ001":
		return fmt.Errorf("%w: %s", ErrQueueShareFull, pgerr.Server(err).Message)
	case "LQ002":
		return &TicketClearedError{Message: pgerr.Server(err).Message}
	}
	return translate(err)
}

// newConnectError is the *ConnectError for pgx's pce, found in err.
func newConnectError(pce *pgconn.ConnectError, err error) *ConnectError {
	ce := &ConnectError{Reason: rootCause(pce.Unwrap()), err: err}
	if c := pce.Config; c != nil {
		ce.Host, ce.Port, ce.Database, ce.User = c.Host, c.Port, c.Database, c.User
	}
	return ce
}

// rootCause returns the innermost error message: the server's message, or
// the system's ("connection refused"). pgx joins the errors of each address
// and TLS fallback it tried; the first one stands for them all.
func rootCause(err error) string {
	for err != nil {
		if pgErr := pgerr.Server(err); pgErr != nil {
			return pgErr.Message
		}
		switch u := err.(type) {
		case interface{ Unwrap() []error }:
			if errs := u.Unwrap(); len(errs) > 0 {
				err = errs[0]
				continue
			}
		case interface{ Unwrap() error }:
			if next := u.Unwrap(); next != nil {
				err = next
				continue
			}
		}
		return err.Error()
	}
	return "unknown error"
}

// parseError is the *DSNError for pgx's failure to parse a connection string:
// pgx's reason without the string, which may hold a password.
func parseError(err error) *DSNError {
	var perr *pgconn.ParseConfigError
	if errors.As(err, &perr) && perr.Unwrap() != nil {
		return &DSNError{Reason: perr.Unwrap().Error()}
	}
	return &DSNError{Reason: "cannot parse"}
}

// OutlivedBound reports whether err is the server ending what BoundTx
// bounded: a statement cancelled by statement_timeout (SQLSTATE 57014, also
// raised by pg_cancel_backend) or a session ended by
// idle_in_transaction_session_timeout (25P03).
func OutlivedBound(err error) bool {
	switch sqlstate(err) {
	case "57014", "25P03":
		return true
	}
	return false
}

// sqlstate returns the SQLSTATE of the server error in err's chain, "" when
// the server raised none.
func sqlstate(err error) string { return pgerr.Code(err) }

// class returns a SQLSTATE's class, its first two characters.
func class(code string) string {
	if len(code) < 2 {
		return ""
	}
	return code[:2]
}

// isSerializationFailure reports SQLSTATE 40001: the statement granted
// nothing and may be retried (lease.acquire raises it when another run's
// fence overtook its grant in a race).
func isSerializationFailure(err error) bool { return sqlstate(err) == "40001" }

// isLockTimeout reports SQLSTATE 55P03 (lock_not_available): migrate's
// lock_timeout ran out waiting for a lock another session holds.
func isLockTimeout(err error) bool { return sqlstate(err) == "55P03" }

// isMaintenanceBusy reports lease.maintain_events' refusal while another
// maintenance holds lease.maintenance's row: SQLSTATE 55P03 on that table
// (a lock_timeout elsewhere in the maintenance names no table, or another).
func isMaintenanceBusy(err error) bool {
	pgErr := pgerr.Server(err)
	return pgErr != nil && pgErr.Code == "55P03" && pgErr.SchemaName == "lease" && pgErr.TableName == "maintenance"
}

// inboxError is translate, with the inbox's refusals as this package's
// errors: a key reused (SQLSTATE LM001) ErrMessageKeyReused, a full inbox
// (LM002) ErrInboxFull, a login's full share (LM003) ErrInboxShareFull, a
// caller that does not hold the lease (LM004) ErrNotHeld, with the
// server's message.
func inboxError(err error) error {
	switch sqlstate(err) {
	case "LM001":
		return fmt.Errorf("%w: %s", ErrMessageKeyReused, pgerr.Server(err).Message)
	case "LM002":
		return fmt.Errorf("%w: %s", ErrInboxFull, pgerr.Server(err).Message)
	case "LM003":
		return fmt.Errorf("%w: %s", ErrInboxShareFull, pgerr.Server(err).Message)
	case "LM004":
		return fmt.Errorf("%w: %s", ErrNotHeld, pgerr.Server(err).Message)
	}
	return translate(err)
}
