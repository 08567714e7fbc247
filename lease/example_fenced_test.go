package lease_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"

	"github.com/leasetop/leasetop/data"
	"github.com/leasetop/leasetop/lease"
)

// The protected write in the lease's own database: only the write goes in
// FencedTx. After the lease is lost (here an operator force-released it),
// the write is refused and nothing is kept.
func ExampleLease_FencedTx() {
	dsn, drop := exampleDatabase()
	defer drop()
	ctx := context.Background()
	store, err := data.Open(ctx, dsn)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()
	pool := store.Pool()
	if _, err := pool.Exec(ctx, `CREATE TABLE reply (session text, body text, fence bigint)`); err != nil {
		fmt.Println(err)
		return
	}
	client, err := lease.New(store, lease.Config{TTL: time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	allow := lease.AuthorizerFunc(func(context.Context, lease.Request) error { return nil })
	p, err := client.Authorize(ctx, allow, lease.Key{Account: "acme", Session: "chat-42"}, "worker-7")
	if err != nil {
		fmt.Println(err)
		return
	}
	l, err := client.Try(ctx, p)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Release(ctx)

	write := func(body string) error {
		return l.FencedTx(ctx, pool, func(ctx context.Context, tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `INSERT INTO reply VALUES ($1, $2, $3)`, l.Key().Session, body, l.Fence())
			return err
		})
	}
	fmt.Println("while held:", write("hello"))
	store.ForceRelease(ctx, l.Key(), l.RunID(), "stuck")
	<-l.Done()
	err = write("too late")
	fmt.Println("after the loss:", errors.Is(err, lease.ErrStale), errors.Is(err, lease.ErrForceReleased))
	// Output:
	// while held: <nil>
	// after the loss: true true
}

// database/sql (here with pgx's stdlib driver): FencedSQLTx for the
// protected write; Token.CheckSQL is the fence check alone, for a
// transaction of your own.
func ExampleLease_FencedSQLTx() {
	dsn, drop := exampleDatabase()
	defer drop()
	ctx := context.Background()
	store, err := data.Open(ctx, dsn)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `CREATE TABLE reply (session text, body text, fence bigint)`); err != nil {
		fmt.Println(err)
		return
	}
	client, err := lease.New(store, lease.Config{TTL: 15 * time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	allow := lease.AuthorizerFunc(func(context.Context, lease.Request) error { return nil })
	p, err := client.Authorize(ctx, allow, lease.Key{Account: "acme", Session: "chat-42"}, "worker-7")
	if err != nil {
		fmt.Println(err)
		return
	}
	err = client.Do(ctx, p, lease.BusyRefuse, func(ctx context.Context, l *lease.Lease) error {
		return l.FencedSQLTx(ctx, db, func(ctx context.Context, tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO reply VALUES ($1, $2, $3)`, l.Key().Session, "hello", l.Fence())
			return err
		})
	})
	fmt.Println("written:", err)

	// The check alone, in your own transaction (the lease above is released).
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer tx.Rollback()
	stale := lease.Token{Key: lease.Key{Account: "acme", Session: "chat-42"}, RunID: [16]byte{1}, Fence: 1}
	fmt.Println("stale token:", errors.Is(stale.CheckSQL(ctx, tx), lease.ErrStale))
	// Output:
	// written: <nil>
	// stale token: true
}
