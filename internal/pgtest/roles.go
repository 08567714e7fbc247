package pgtest

import (
	"context"
	"net"
	"net/url"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"
)

// ReaderPassword is the password of the login role ReaderURL creates.
const ReaderPassword = "pw"

// ReaderURL creates a login role that is only a lease_reader (SELECT on the
// lease schema), named after the database and dropped when the test ends,
// and returns the URL that connects to db as it.
func (db DB) ReaderURL(t testing.TB) string {
	t.Helper()
	ctx := context.Background()
	role := "reader_" + db.Name
	cfg, err := pgx.ParseConfig(db.URL)
	if err != nil {
		t.Fatalf("parse the test database's URL: %v", err)
	}
	admin, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("connect to the test database: %v", err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, `CREATE ROLE `+pgx.Identifier{role}.Sanitize()+` LOGIN PASSWORD '`+ReaderPassword+`' IN ROLE lease_reader`); err != nil {
		t.Fatalf("create the reader role: %v", err)
	}
	t.Cleanup(func() {
		if c, err := pgx.Connect(ctx, AdminURL()); err == nil {
			_, _ = c.Exec(ctx, `DROP ROLE IF EXISTS `+pgx.Identifier{role}.Sanitize())
			c.Close(ctx)
		}
	})
	u := url.URL{
		Scheme:   "postgres",
		User:     url.UserPassword(role, ReaderPassword),
		Host:     net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))),
		Path:     "/" + db.Name,
		RawQuery: "sslmode=disable",
	}
	return u.String()
}
