package pgserver

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
)

// CreateMigrated creates the database name on the server adminURL connects
// to (as a role with CREATEDB), migrates it to this leasetop's lease schema
// and returns its URL: adminURL with the database replaced. The test
// harness's template database, the demo's and bench's are all made so.
func CreateMigrated(ctx context.Context, adminURL, name string) (string, error) {
	adminCfg, err := pgx.ParseConfig(adminURL)
	if err != nil {
		return "", fmt.Errorf("admin URL: %w", data.Translate(err))
	}
	admin, err := data.Connect(ctx, adminCfg)
	if err != nil {
		return "", fmt.Errorf("connect to the server: %w", err)
	}
	defer admin.Close(context.WithoutCancel(ctx))
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	dbURL := WithDatabase(adminURL, name)
	dbCfg, err := pgx.ParseConfig(dbURL)
	if err != nil {
		return "", fmt.Errorf("database URL: %w", data.Translate(err))
	}
	conn, err := data.Connect(ctx, dbCfg)
	if err != nil {
		return "", fmt.Errorf("connect to %s: %w", name, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if err := data.Migrate(ctx, conn); err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	return dbURL, nil
}

// WithDatabase returns dsn (a URL or a keyword/value string) with its
// database replaced by db.
func WithDatabase(dsn, db string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.Scheme == "" {
		// keyword/value form
		return strings.TrimSpace(dsn) + " dbname=" + db
	}
	u.Path = "/" + db
	return u.String()
}
