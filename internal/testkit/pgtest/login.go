package pgtest

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Login creates a login role that is a member of group (one of the lease
// roles; "" for a role with no lease rights at all), dropped when t ends. It
// returns a URL that connects to db as that role, and the role's name.
func Login(t testing.TB, db DB, group string) (dsn, role string) {
	t.Helper()
	role = fmt.Sprintf("%s_%s_%d", cmp.Or(group, "nobody"), db.Name, h.counter.Add(1))
	return LoginNamed(t, db, role, group), role
}

// LoginNamed is Login for a role named role, for a test that shows the name
// where its length matters (a screen's column). The name must be unique on
// the server: make it from db.Name.
func LoginNamed(t testing.TB, db DB, role, group string) (dsn string) {
	t.Helper()
	ctx := context.Background()
	password := uuid.NewString()
	stmt := "CREATE ROLE " + pgx.Identifier{role}.Sanitize() + " LOGIN PASSWORD '" + password + "'"
	if group != "" {
		stmt += " IN ROLE " + pgx.Identifier{group}.Sanitize()
	}
	if _, err := db.Conn(t).Exec(ctx, stmt); err != nil {
		t.Fatalf("create login role %s: %v", role, err)
	}
	t.Cleanup(func() {
		if c, err := pgx.Connect(ctx, db.URL); err == nil { // gone already when a test dropped it early (PlantShadows)
			_, _ = c.Exec(ctx, "DROP OWNED BY "+pgx.Identifier{role}.Sanitize())
			c.Close(ctx)
		}
		if c, err := pgx.Connect(ctx, h.adminURL); err == nil {
			_, _ = c.Exec(ctx, "DROP ROLE IF EXISTS "+pgx.Identifier{role}.Sanitize())
			c.Close(ctx)
		}
	})
	u, err := url.Parse(db.URL)
	if err != nil {
		t.Fatalf("parse test URL: %v", err)
	}
	u.User = url.UserPassword(role, password)
	return u.String()
}
