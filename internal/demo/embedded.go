package demo

import (
	"context"
	"fmt"
	"time"

	"github.com/leasetop/leasetop/internal/pgserver"
)

// Database is the name of the demo's database on an embedded server.
const Database = "leasetop_demo"

// Embedded is a throwaway PostgreSQL server holding the migrated demo
// database. Close stops it and removes its folder.
type Embedded struct {
	srv *pgserver.Server
}

// StartEmbedded starts a throwaway server from the installed PostgreSQL
// binaries (as the postgres user when running as root), creates the demo
// database and migrates it. It returns pgserver.ErrNoBinaries, whose message
// says how to install them, when there are none. The server's folder holds
// a file naming this process, so that RemoveLeftovers can remove the folder
// if this process is killed before Close. step, when not nil, is told each
// step as it begins (initdb, starting PostgreSQL, creating the database):
// a first start takes seconds.
func StartEmbedded(ctx context.Context, step func(string)) (*Embedded, error) {
	srv, err := pgserver.Start(ctx, pgserver.Options{Claim: claim, Step: step})
	if err != nil {
		return nil, err
	}
	e := &Embedded{srv: srv}
	if step != nil {
		step("creating and migrating the demo database")
	}
	if err := e.create(ctx); err != nil {
		srv.Close()
		return nil, err
	}
	return e, nil
}

func (e *Embedded) create(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := pgserver.CreateMigrated(ctx, e.srv.URL("postgres"), Database); err != nil {
		return fmt.Errorf("embedded server: %w", err)
	}
	return nil
}

// URL connects to the demo database as the server's superuser.
func (e *Embedded) URL() string { return e.srv.URL(Database) }

// Dir is the temporary folder that holds the server's data; Close removes it.
func (e *Embedded) Dir() string { return e.srv.Dir() }

// Port is the server's TCP port on 127.0.0.1.
func (e *Embedded) Port() int { return e.srv.Port() }

// PID is the server's process id.
func (e *Embedded) PID() int { return e.srv.PID() }

// Close stops the server and removes its folder. It is safe to call twice.
func (e *Embedded) Close() { e.srv.Close() }
