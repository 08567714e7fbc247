package lease_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/data"
	"github.com/leasetop/leasetop/lease"
)

// Authorization is unskippable: a refused request never competes.
func ExampleClient_Authorize() {
	dsn, drop := exampleDatabase()
	defer drop()
	ctx := context.Background()
	store, _ := data.Open(ctx, dsn)
	defer store.Close()
	client, _ := lease.New(store, lease.Config{})
	defer client.Close()

	onlyAcme := lease.AuthorizerFunc(func(ctx context.Context, r lease.Request) error {
		if r.Key.Account != "acme" {
			return fmt.Errorf("account %q is not yours", r.Key.Account)
		}
		return nil
	})
	_, err := client.Authorize(ctx, onlyAcme, lease.Key{Account: "globex", Session: "s1"}, "worker")
	fmt.Println(errors.Is(err, lease.ErrDenied), err)

	// Try accepts only a Permit that Authorize minted.
	_, err = client.Try(ctx, lease.Permit{})
	fmt.Println(err)
	// Output:
	// true not authorized to compete for this lease: account "globex" is not yours
	// no permit: call Client.Authorize first
}

// A waiter gets the lease the moment the holder releases it.
func ExampleClient_Wait() {
	dsn, drop := exampleDatabase()
	defer drop()
	ctx := context.Background()
	store, _ := data.Open(ctx, dsn)
	defer store.Close()
	client, _ := lease.New(store, lease.Config{TTL: 30 * time.Second})
	defer client.Close()
	allow := lease.AuthorizerFunc(func(context.Context, lease.Request) error { return nil })
	key := lease.Key{Account: "acme", Session: "chat-42"}

	pa, _ := client.Authorize(ctx, allow, key, "A")
	a, _ := client.Try(ctx, pa)

	var wg sync.WaitGroup
	wg.Go(func() {
		pb, _ := client.Authorize(ctx, allow, key, "B")
		b, err := client.Wait(ctx, pb) // woken by A's release, not by the 30 s TTL
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("B holds it, fence higher than A's: %v\n", b.Fence() > a.Fence())
		b.Release(ctx)
	})
	a.Release(ctx)
	wg.Wait()
	// Output:
	// B holds it, fence higher than A's: true
}

// Context tells why ownership ended: here an operator force-released the
// lease, and the next renewal (within one renew interval) noticed.
func ExampleLease_Context() {
	dsn, drop := exampleDatabase()
	defer drop()
	ctx := context.Background()
	store, _ := data.Open(ctx, dsn)
	defer store.Close()
	client, _ := lease.New(store, lease.Config{TTL: time.Second})
	defer client.Close()
	allow := lease.AuthorizerFunc(func(context.Context, lease.Request) error { return nil })
	p, _ := client.Authorize(ctx, allow, lease.Key{Account: "acme", Session: "chat-42"}, "worker")
	l, _ := client.Try(ctx, p)
	defer l.Release(ctx)

	store.ForceRelease(ctx, l.Key(), l.RunID(), "stuck")

	<-l.Context().Done()
	cause := context.Cause(l.Context())
	fmt.Println(errors.Is(cause, lease.ErrLost), errors.Is(cause, lease.ErrForceReleased))
	fmt.Println(l.State().Status)
	// Output:
	// true true
	// lost
}

// A protected write in the lease's own database is rejected for a stale
// holder: A was paused, lost the lease to B, and resumed still believing it
// owned the session.
func ExampleToken_Check() {
	dsn, drop := exampleDatabase()
	defer drop()
	ctx := context.Background()
	store, _ := data.Open(ctx, dsn)
	defer store.Close()
	pool := store.Pool()
	pool.Exec(ctx, `CREATE TABLE reply (session text, body text, fence bigint)`)
	client, _ := lease.New(store, lease.Config{TTL: 10 * time.Second})
	defer client.Close()
	allow := lease.AuthorizerFunc(func(context.Context, lease.Request) error { return nil })
	key := lease.Key{Account: "acme", Session: "chat-42"}

	pa, _ := client.Authorize(ctx, allow, key, "A")
	a, _ := client.Try(ctx, pa)
	staleToken := a.Token()
	// A freezes; its lease ends (forced here, expiry in real life) and B takes over.
	store.ForceRelease(ctx, key, a.RunID(), "A is frozen")
	pb, _ := client.Authorize(ctx, allow, key, "B")
	b, _ := client.Try(ctx, pb)
	defer b.Release(ctx)

	write := func(tok lease.Token, body string) error {
		return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if err := tok.Check(ctx, tx); err != nil { // locks the lease row FOR SHARE
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO reply VALUES ($1, $2, $3)`, tok.Key.Session, body, tok.Fence)
			return err
		})
	}
	fmt.Println("A (stale):", errors.Is(write(staleToken, "late answer"), lease.ErrStale))
	fmt.Println("B (owner):", write(b.Token(), "answer"))
	// Output:
	// A (stale): true
	// B (owner): <nil>
}

// An external resource cannot join the lease's transaction; it keeps the
// highest token it has seen per key and rejects lower ones, atomically with
// the write (in SQL: UPDATE ... SET fence = $2 WHERE id = $1 AND fence <= $2).
func Example_externalResource() {
	dsn, drop := exampleDatabase()
	defer drop()
	ctx := context.Background()
	store, _ := data.Open(ctx, dsn)
	defer store.Close()
	client, _ := lease.New(store, lease.Config{TTL: 10 * time.Second})
	defer client.Close()
	allow := lease.AuthorizerFunc(func(context.Context, lease.Request) error { return nil })
	key := lease.Key{Account: "acme", Session: "chat-42"}

	blob := &fencedStore{highest: map[lease.Key]int64{}}

	pa, _ := client.Authorize(ctx, allow, key, "A")
	a, _ := client.Try(ctx, pa)
	fmt.Println("A:", blob.Put(a.Token(), "draft"))
	store.ForceRelease(ctx, key, a.RunID(), "A is frozen")
	pb, _ := client.Authorize(ctx, allow, key, "B")
	b, _ := client.Try(ctx, pb)
	defer b.Release(ctx)
	fmt.Println("B:", blob.Put(b.Token(), "final"))
	fmt.Println("A:", blob.Put(a.Token(), "late draft"))
	// Output:
	// A: <nil>
	// B: <nil>
	// A: stale fencing token
}

// fencedStore stands for an external resource that checks fencing tokens.
type fencedStore struct {
	mu      sync.Mutex
	highest map[lease.Key]int64
}

func (s *fencedStore) Put(tok lease.Token, body string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if tok.Fence < s.highest[tok.Key] {
		return lease.ErrStale
	}
	s.highest[tok.Key] = tok.Fence
	_ = body // ... write it
	return nil
}
