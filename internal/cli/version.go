package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/termtext"
	leasesql "github.com/leasetop/leasetop/sql"
)

// cmdVersion prints what this binary is (its module version and commit)
// and the lease schema version it migrates to; with --dsn, the database's
// schema version beside it and whether migrate is due, as kubectl version
// shows the client and the server. Without --dsn it connects to nothing, so
// it answers offline (DATABASE_URL alone does not make it connect).
func cmdVersion(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "version", "version [--dsn URL] [--json]")
	dsn := fs.String("dsn", "", "also read this database's lease schema version, and say whether leasetop migrate is due")
	asJSON := fs.Bool("json", false, "print one JSON object")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("version takes no arguments, got %q", fs.Arg(0))
	}
	v := versionReport{Leasetop: readBuild(), Schema: leasesql.Version}
	if *dsn != "" {
		warnPassword(env, "--dsn", *dsn)
		db, err := readDatabaseVersion(ctx, *dsn)
		if err != nil {
			return err
		}
		v.Database = &db
	}
	if *asJSON {
		return json.NewEncoder(env.Stdout).Encode(v)
	}
	v.writeText(env.Stdout)
	return nil
}

// versionReport is leasetop version's answer.
type versionReport struct {
	Leasetop buildInfo `json:"leasetop"`
	// Schema is the lease schema version this binary migrates to.
	Schema   int              `json:"schema"`
	Database *databaseVersion `json:"database,omitempty"`
}

// databaseVersion is what version --dsn read.
type databaseVersion struct {
	Server string `json:"server"` // host:port/database, never the password
	// Schema is the database's lease schema version, 0 without one.
	Schema int `json:"schema"`
	// MigrateDue says that leasetop migrate would create or upgrade it.
	MigrateDue bool `json:"migrate_due"`
	// Newer says that the database's schema is newer than this binary's:
	// upgrade leasetop.
	Newer bool `json:"newer"`
}

// readDatabaseVersion connects to dsn and reads its lease schema version,
// whatever it is. It needs no more than lease_reader's rights (or none, on a
// database without the schema).
func readDatabaseVersion(ctx context.Context, dsn string) (databaseVersion, error) {
	cfg, err := data.ParseConnConfig(dsn)
	if err != nil {
		return databaseVersion{}, connError(err)
	}
	conn, err := data.Connect(ctx, cfg)
	if err != nil {
		return databaseVersion{}, connError(err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	have, err := data.SchemaVersion(ctx, conn)
	if err != nil {
		return databaseVersion{}, connError(err)
	}
	return databaseVersion{
		Server:     net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))) + "/" + cfg.Database,
		Schema:     have,
		MigrateDue: have < leasesql.Version,
		Newer:      have > leasesql.Version,
	}, nil
}

func (v versionReport) writeText(w io.Writer) {
	fmt.Fprintf(w, "leasetop:        %s\n", v.Leasetop.long())
	fmt.Fprintf(w, "schema:          %d (what leasetop migrate creates)\n", v.Schema)
	if v.Database == nil {
		return
	}
	db := v.Database
	fmt.Fprintf(w, "database:        %s\n", termtext.Clean(db.Server, 0))
	switch {
	case db.Schema == 0:
		fmt.Fprintln(w, "database schema: none: run leasetop migrate")
	case db.MigrateDue:
		fmt.Fprintf(w, "database schema: %d: migrate is due (leasetop migrate upgrades it to %d)\n", db.Schema, v.Schema)
	case db.Newer:
		fmt.Fprintf(w, "database schema: %d: newer than this leasetop's %d: upgrade leasetop\n", db.Schema, v.Schema)
	default:
		fmt.Fprintf(w, "database schema: %d (current)\n", db.Schema)
	}
}

// schemaError is the one line for a database whose lease schema is not this
// leasetop's (exit 6). A schema newer than the binary names the binary's
// version, so that the line says which leasetop is too old.
func schemaError(se *data.SchemaError) error {
	if se.Have <= se.Want {
		return &ExitError{Code: ExitSchema, Err: se}
	}
	return &ExitError{Code: ExitSchema, Err: fmt.Errorf(
		"this leasetop %s is older than the database: its lease schema is at version %d, this leasetop knows %d: upgrade leasetop (leasetop version --dsn URL compares them)",
		readBuild().short(), se.Have, se.Want)}
}

// asSchemaError finds a *data.SchemaError in err.
func asSchemaError(err error) (*data.SchemaError, bool) {
	var se *data.SchemaError
	ok := errors.As(err, &se)
	return se, ok
}
