package data_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/leasetop/leasetop/data"
	"github.com/leasetop/leasetop/internal/pgtest"
	leasesql "github.com/leasetop/leasetop/sql"
)

func TestMigrateIsIdempotent(t *testing.T) {
	ctx := context.Background()
	db := pgtest.NewEmpty(t)
	conn := db.Conn(t)
	for i := range 2 {
		if err := data.Migrate(ctx, conn); err != nil {
			t.Fatalf("Migrate #%d: %v", i+1, err)
		}
	}
	if v, err := data.SchemaVersion(ctx, conn); err != nil || v != leasesql.Version {
		t.Fatalf("SchemaVersion = %d, %v; want %d", v, err, leasesql.Version)
	}
	if _, err := data.Open(ctx, db.URL); err != nil {
		t.Fatalf("Open after Migrate: %v", err)
	}
}

func TestOpenRefusesWrongSchema(t *testing.T) {
	ctx := context.Background()
	t.Run("missing", func(t *testing.T) {
		_, err := data.Open(ctx, pgtest.NewEmpty(t).URL)
		if !errors.Is(err, data.ErrSchema) || !strings.Contains(err.Error(), "run leasetop migrate") {
			t.Fatalf("Open err = %v, want ErrSchema saying run leasetop migrate", err)
		}
	})
	for _, tt := range []struct {
		name    string
		version int
		want    string
	}{
		{"older", leasesql.Version - 1, "run leasetop migrate"},
		{"newer", leasesql.Version + 1, "upgrade leasetop"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			db := pgtest.New(t)
			if _, err := db.Conn(t).Exec(ctx, `UPDATE lease.schema_version SET version = $1`, tt.version); err != nil {
				t.Fatal(err)
			}
			_, err := data.Open(ctx, db.URL)
			if !errors.Is(err, data.ErrSchema) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Open err = %v, want ErrSchema saying %q", err, tt.want)
			}
		})
	}
	t.Run("migrate refuses newer", func(t *testing.T) {
		db := pgtest.New(t)
		conn := db.Conn(t)
		if _, err := conn.Exec(ctx, `UPDATE lease.schema_version SET version = $1`, leasesql.Version+1); err != nil {
			t.Fatal(err)
		}
		if err := data.Migrate(ctx, conn); !errors.Is(err, data.ErrSchema) {
			t.Fatalf("Migrate over a newer schema err = %v, want ErrSchema", err)
		}
	})
}

func TestParseConfigHidesPassword(t *testing.T) {
	for _, dsn := range []string{
		"postgres://u:s3cretpw@host:notaport/db",
		"host=h password=s3cretpw port=notaport",
		"postgres://u:s3cretpw@[::1/db",
	} {
		_, err := data.ParsePoolConfig(dsn)
		if err == nil {
			t.Fatalf("ParsePoolConfig(%q) succeeded, want an error", dsn)
		}
		if strings.Contains(err.Error(), "s3cretpw") {
			t.Errorf("ParsePoolConfig error %q reveals the password", err)
		}
	}
}
