package data_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	leasesql "github.com/leasetop/leasetop/sql"
)

// TestMigrateFromVersion6 migrates a real version-6 schema (testdata/v6:
// git show 2771023:sql/<file>) with a live lease and history in place: no
// table is rewritten, the history is unchanged (its rows name no message),
// the holder renews; what version 7 adds is there: a message sent to the
// live lease's conversation reaches its holder, who acknowledges it, and
// the history records both. A second migrate changes nothing.
func TestMigrateFromVersion6(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.NewEmpty(t)
	conn := db.Conn(t)
	createAsOwner(t, conn, 6)
	run := uuid.New()
	k := data.Key{Account: "acme", Session: "live"}
	var fence int64
	if err := conn.QueryRow(ctx, `SELECT fence FROM lease.acquire($1, $2, $3, '1 hour', 'desktop')`,
		k.Account, k.Session, run).Scan(&fence); err != nil {
		t.Fatalf("version 6 acquire: %v", err)
	}
	files := tableFiles(t, conn)
	var before int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM lease.event`).Scan(&before); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		from, err := data.MigrateWith(ctx, conn, data.MigrateOptions{})
		if err != nil {
			t.Fatalf("Migrate #%d from version 6: %v", i+1, err)
		}
		if want := []int{6, leasesql.Version}[i]; from != want {
			t.Errorf("Migrate #%d found version %d, want %d", i+1, from, want)
		}
	}
	after := tableFiles(t, conn)
	for name, file := range files {
		if after[name] != file {
			t.Errorf("%s's file is %d after the migration, %d before: rewritten", name, after[name], file)
		}
	}
	var events, named int
	if err := conn.QueryRow(ctx, `SELECT count(*), count(message_id) FROM lease.event`).Scan(&events, &named); err != nil || events != before || named != 0 {
		t.Errorf("events after the migration = %d (%d naming a message), %v; want the %d there were, none naming one", events, named, err, before)
	}

	s := db.Store(t)
	if _, err := s.Renew(ctx, k, run, time.Hour); err != nil {
		t.Fatalf("the live holder's Renew after the migration: %v", err)
	}
	if _, err := s.SendMessage(ctx, k, data.MessageSteer, "also check March", "phone", "k1", time.Minute); err != nil {
		t.Fatalf("SendMessage after the migration: %v", err)
	}
	ms, err := s.ReceiveMessages(ctx, k, run, 0, data.MaxReceive)
	if err != nil || len(ms) != 1 || ms[0].Body != "also check March" {
		t.Fatalf("the holder's ReceiveMessages after the migration = %+v, %v; want the one steer", ms, err)
	}
	if out, err := s.AckMessage(ctx, k, run, ms[0].ID); err != nil || out != data.AckDone {
		t.Fatalf("AckMessage after the migration = %v, %v; want acked", out, err)
	}
	var kinds []string
	if err := conn.QueryRow(ctx, `SELECT array_agg(kind::text ORDER BY id) FROM lease.event WHERE message_id = $1`, ms[0].ID).Scan(&kinds); err != nil ||
		len(kinds) != 3 || kinds[0] != "message_sent" || kinds[1] != "message_delivered" || kinds[2] != "message_acked" {
		t.Errorf("the message's history after the migration = %v, %v; want sent, delivered, acked", kinds, err)
	}
}
