package lease_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/data"
	"github.com/leasetop/leasetop/lease"
)

// Own an execution: authorize the caller, wait for the session's lease,
// write under the fence while it is held, release. reply, below, is the
// example docs/run.md shows, and README.md a part of (TestReadmeExample
// keeps them true to this file).
func Example() {
	dsn, drop := exampleDatabase()
	defer drop()
	ctx := context.Background()
	if err := createReplyTable(ctx, dsn); err != nil {
		fmt.Println(err)
		return
	}
	key := lease.Key{Account: "acme", Session: "chat-42"}
	fmt.Println("member:", reply(ctx, dsn, member("acme"), key, "hello"))
	err := reply(ctx, dsn, member("globex"), key, "hello from elsewhere")
	fmt.Println("not a member:", errors.Is(err, lease.ErrDenied))
	// Output:
	// member: <nil>
	// not a member: true
}

// member is a User who belongs to one account.
type member string

func (m member) MemberOf(account string) bool { return string(m) == account }

// createReplyTable creates the example's protected table.
func createReplyTable(ctx context.Context, dsn string) error {
	store, err := data.Open(ctx, dsn)
	if err != nil {
		return err
	}
	defer store.Close()
	_, err = store.Pool().Exec(ctx, `CREATE TABLE reply (session text, body text, fence bigint)`)
	return err
}

// reply writes the answer to one turn of a conversation, only while this
// process owns the conversation's execution.
func reply(ctx context.Context, dsn string, user User, key lease.Key, answer string) error {
	store, err := data.Open(ctx, dsn) // a pool; the lease schema must be at this leasetop's version
	if err != nil {
		return err
	}
	defer store.Close() // deferred first, so it runs last, after client.Close
	client, err := lease.New(store, lease.Config{TTL: 15 * time.Second})
	if err != nil {
		return err
	}
	defer client.Close() // in a server: one Client for the process, shared by every session

	// Authorize first: owning a lease is concurrency control, never access control.
	// Try, Wait and Do accept only a Permit, and only Authorize mints one.
	authz := lease.AuthorizerFunc(func(ctx context.Context, r lease.Request) error {
		if !user.MemberOf(r.Key.Account) {
			return errors.New("not a member of this account")
		}
		return nil
	})
	permit, err := client.Authorize(ctx, authz, key, "worker-7")
	if err != nil {
		return err // errors.Is(err, lease.ErrDenied): it never competed
	}

	// Wait for the lease, work while it is held, release once the function returned.
	err = client.Do(ctx, permit, lease.BusyWait, func(ctx context.Context, l *lease.Lease) error {
		// ctx is cancelled the moment ownership might be lost; context.Cause(ctx) says why.
		// ... the long part (call the model, run tools) goes here, with ctx ...
		return l.FencedTx(ctx, store.Pool(), func(ctx context.Context, tx pgx.Tx) error {
			// Only the protected write in here: while it is open, nobody can take over.
			_, err := tx.Exec(ctx, `INSERT INTO reply (session, body, fence) VALUES ($1, $2, $3)`,
				key.Session, answer, l.Fence())
			return err
		})
	})
	switch {
	case errors.Is(err, lease.ErrHeld):
		// Only with lease.BusyRefuse: someone else is working on it.
	case errors.Is(err, lease.ErrStale), errors.Is(err, lease.ErrLost):
		// Another run owns the conversation now. ErrStale: the write was refused, nothing
		// was written. ErrLost: ErrPreempted, ErrForceReleased, ErrTakenOver, ErrRejected or
		// ErrExpired say why. (A hand-over, l.HandOver, is no loss: Do never returns ErrHandedOver.)
	}
	return err
}

// User is the authenticated caller, as your program knows it.
type User interface{ MemberOf(account string) bool }
