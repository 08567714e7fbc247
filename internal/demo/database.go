package demo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/pgserver"
)

// DB is the database a demo runs on: a throwaway embedded server, or the
// user's database, where the demo prefixes its accounts and removes on Close
// only what it made.
type DB struct {
	store    *data.Store
	embedded *Embedded
	accounts []string
	created  bool // the demo created the leasetop_demo schema on the user's database
	where    string
}

// EmbeddedError is a failure to start the embedded server, other than
// pgserver.ErrNoBinaries: it concerns no database the user named.
type EmbeddedError struct{ Err error }

func (e *EmbeddedError) Error() string { return "start the embedded PostgreSQL: " + e.Err.Error() }

// Unwrap returns the server's error.
func (e *EmbeddedError) Unwrap() error { return e.Err }

// OpenDB opens the database a demo with cfg runs on, creates the demo's
// tables there (see Setup) and sets the accounts' plans (see SetLimits). With dsn "" it starts an embedded server
// (see StartEmbedded); otherwise it gives cfg a random account Prefix, so the
// demo touches only its own leases on a shared database. It sets cfg.DSN.
//
// Its errors are pgserver.ErrNoBinaries as it is (its message says how to
// install PostgreSQL), an *EmbeddedError, or data.Open's and Setup's errors
// as they are, for the caller to word.
func OpenDB(ctx context.Context, dsn string, cfg *Config) (*DB, error) {
	db := &DB{}
	if dsn == "" {
		left := RemoveLeftovers(os.TempDir())
		emb, err := StartEmbedded(ctx, cfg.Starting)
		if errors.Is(err, pgserver.ErrNoBinaries) {
			return nil, err
		}
		if err != nil {
			return nil, &EmbeddedError{Err: err}
		}
		db.embedded, dsn = emb, emb.URL()
		db.where = fmt.Sprintf("embedded PostgreSQL in %s (port %d, pid %d), removed on exit", emb.Dir(), emb.Port(), emb.PID())
		if len(left) > 0 {
			db.where += fmt.Sprintf("; removed %d folder(s) that killed demos left: %s", len(left), strings.Join(left, ", "))
		}
	} else {
		cfg.Prefix = sharedPrefix()
	}
	cfg.DSN = dsn
	store, err := data.OpenWith(ctx, dsn, data.Options{PinSearchPath: true}) // --dsn may name a shared database
	if err != nil {
		db.Close()
		return nil, err
	}
	db.store = store
	if db.where == "" {
		c := store.Pool().Config().ConnConfig
		db.where = fmt.Sprintf("%s:%d/%s, accounts prefixed %q (removed on exit; their events stay)", c.Host, c.Port, c.Database, cfg.Prefix)
	}
	if db.created, err = Setup(ctx, store); err != nil {
		db.Close()
		return nil, err
	}
	db.accounts = cfg.AccountIDs()
	if err := SetLimits(ctx, store, *cfg); err != nil && !errNoLimits(err) {
		db.Close()
		return nil, fmt.Errorf("set the plans' limits: %w", err)
	}
	return db, nil
}

// Store is the demo's database.
func (db *DB) Store() *data.Store { return db.store }

// Where says, in one line, which database the demo runs on and what it
// removes on exit.
func (db *DB) Where() string { return db.where }

// Close removes what the demo made: the whole server when embedded, else
// its leases, rows and (if it created it) schema. It is safe to call twice.
func (db *DB) Close() {
	if db.store != nil {
		if db.embedded == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_ = Cleanup(ctx, db.store, db.accounts, db.created)
			cancel()
		}
		db.store.Close()
		db.store = nil
	}
	if db.embedded != nil {
		db.embedded.Close()
		db.embedded = nil
	}
}
