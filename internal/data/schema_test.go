package data_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	leasesql "github.com/leasetop/leasetop/sql"
)

func TestMigrateIsIdempotent(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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

// unsafeSamples are characters at the edges of the class lease.safe_text
// refuses (and the table's CHECKs spell out), with whether each is refused:
// controls, bidirectional formatting, separators and invisible characters
// (zero-width spaces and joiners, soft hyphen, tags…) are; a Cyrillic a, a
// variation selector and an emoji are not.
var unsafeSamples = []struct {
	r       rune
	refused bool
}{
	{0x01, true}, {0x1f, true}, {0x20, false}, {0x7e, false}, {0x7f, true}, {0x9b, true}, {0x9f, true},
	{0xa0, false}, {0xac, false}, {0xad, true}, {0xae, false}, {0xe9, false}, {0x034e, false}, {0x034f, true},
	{0x0350, false}, {0x0430, false}, {0x061b, false}, {0x061c, true}, {0x115e, false}, {0x115f, true}, {0x1160, true},
	{0x1161, false}, {0x17b3, false}, {0x17b4, true}, {0x17b5, true}, {0x17b6, false}, {0x180d, false}, {0x180e, true},
	{0x180f, false}, {0x200a, false}, {0x200b, true}, {0x200c, true}, {0x200d, true}, {0x200e, true},
	{0x200f, true}, {0x2010, false}, {0x2027, false}, {0x2028, true}, {0x2029, true}, {0x202a, true}, {0x202e, true},
	{0x202f, false}, {0x205f, false}, {0x2060, true}, {0x2064, true}, {0x2065, true}, {0x2066, true}, {0x2069, true},
	{0x206a, true}, {0x206f, true}, {0x2070, false}, {0x3163, false}, {0x3164, true}, {0x3165, false},
	{0xfe0f, false}, {0xfefe, false}, {0xfeff, true}, {0xff9f, false}, {0xffa0, true}, {0xffa1, false},
	{0x1bc9f, false}, {0x1bca0, true}, {0x1bca3, true}, {0x1bca4, false}, {0x1d172, false}, {0x1d173, true},
	{0x1d17a, true}, {0x1d17b, false}, {0x1f600, false}, {0xe0000, true}, {0xe0001, true}, {0xe0041, true},
	{0xe007f, true}, {0xe0080, false}, {0xe0100, false},
}

// TestTextRulesAgree: lease.safe_text (the functions' checks) and the
// table's CHECKs and the inbox's domains, which spell the same class out,
// refuse the same characters, in a new schema and in one upgraded from
// version 1.
func TestTextRulesAgree(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fresh := pgtest.New(t).Conn(t)
	upgraded := pgtest.NewEmpty(t).Conn(t)
	createV1(t, upgraded)
	if err := data.Migrate(ctx, upgraded); err != nil {
		t.Fatal(err)
	}
	for name, conn := range map[string]*pgx.Conn{"new schema": fresh, "upgraded from version 1": upgraded} {
		for _, tt := range unsafeSamples {
			s := "x" + string(tt.r) + "y"
			var safe bool
			if err := conn.QueryRow(ctx, `SELECT lease.safe_text($1)`, s).Scan(&safe); err != nil {
				t.Fatal(err)
			}
			if safe == tt.refused {
				t.Errorf("%s: lease.safe_text(%+q) = %v, want %v", name, s, safe, !tt.refused)
			}
			if err := data.ValidateHolder(s); (err != nil) != tt.refused {
				t.Errorf("data.ValidateHolder(%+q) = %v, want refused %v", s, err, tt.refused)
			}
			if err := data.ValidateAttachment(s); (err != nil) != tt.refused {
				t.Errorf("data.ValidateAttachment(%+q) = %v, want refused %v", s, err, tt.refused)
			}
			for _, domain := range []string{"lease.message_text", "lease.message_key"} { // inbox.sql's
				var pgErr *pgconn.PgError
				_, err := conn.Exec(ctx, `SELECT $1::text::`+domain, s)
				if refused := errors.As(err, &pgErr) && pgErr.Code == "23514"; refused != tt.refused {
					t.Errorf("%s: %s with %+q: err = %v, want refused %v", name, domain, s, err, tt.refused)
				}
			}
			for _, col := range []string{"account_id", "session_id", "holder", "attachment"} {
				vals := map[string]string{"account_id": "a", "session_id": "s", "holder": "h", "attachment": "stream-1"}
				vals[col] = s
				err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
					_, err := tx.Exec(ctx, `INSERT INTO lease.session_lease
						(account_id, session_id, run_id, holder, fence, acquired_at, renewed_at, expires_at, attachment)
						VALUES ($1, $2, gen_random_uuid(), $3, 1, now(), now(), now(), $4)`,
						vals["account_id"], vals["session_id"], vals["holder"], vals["attachment"])
					if err == nil {
						err = errRollback
					}
					return err
				})
				var pgErr *pgconn.PgError
				refused := errors.As(err, &pgErr) && pgErr.Code == "23514"
				if refused != tt.refused {
					t.Errorf("%s: CHECK on %s with %+q: err = %v, want refused %v", name, col, s, err, tt.refused)
				}
			}
		}
	}
}

var errRollback = errors.New("roll back")

// TestEventKindIsChecked: lease.event takes only the kinds the protocol
// writes (a domain since the check moved off the table), in a new schema and
// in one upgraded from version 1, whose rows kept their kinds.
func TestEventKindIsChecked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fresh := pgtest.New(t).Conn(t)
	upgraded := pgtest.NewEmpty(t).Conn(t)
	createV1(t, upgraded)
	if err := data.Migrate(ctx, upgraded); err != nil {
		t.Fatal(err)
	}
	for name, conn := range map[string]*pgx.Conn{"new schema": fresh, "upgraded from version 1": upgraded} {
		for kind, ok := range map[string]bool{"acquired": true, "truncated": true, "renewed": false, "bogus": false} {
			err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
				_, err := tx.Exec(ctx, `INSERT INTO lease.event (at, kind) VALUES (now(), $1)`, kind)
				if err == nil {
					err = errRollback
				}
				return err
			})
			var pgErr *pgconn.PgError
			refused := errors.As(err, &pgErr) && pgErr.Code == "23514"
			if refused == ok {
				t.Errorf("%s: INSERT of an event of kind %q: err = %v, want refused %v", name, kind, err, !ok)
			}
		}
	}
}
