// Package pgerr is the one place that looks for the server's error in a
// driver error's chain: whether PostgreSQL raised the error (a statement
// that failed, with a SQLSTATE; the session may live on) or something else
// did (a lost connection, a refused dial, a context, the driver itself).
//
// What a SQLSTATE means is decided in internal/data/translate.go alone, which maps
// the driver's errors onto data's (ErrPermission, *PoolerError, Permanent,
// NotApplied, ...). internal/sqlcall, below data, needs only to know that
// the server raised an error, to read a pipeline on past it; lease asks
// data.NotApplied. No other non-test code names pgconn.PgError
// (TestServerErrorsAreReadAtTheBoundary).
package pgerr

import (
	"errors"

	"github.com/jackc/pgx/v5/pgconn"
)

// Server returns the server's error in err's chain, nil when the server
// raised none.
func Server(err error) *pgconn.PgError {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr
	}
	return nil
}

// Code returns the SQLSTATE of the server's error in err's chain, "" when
// the server raised none.
func Code(err error) string {
	if pgErr := Server(err); pgErr != nil {
		return pgErr.Code
	}
	return ""
}
