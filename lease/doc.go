// Package lease owns an execution: a program acquires a session's lease,
// works only while it holds it, and stops the moment it might not hold it
// any more. It builds on the lease protocol in PostgreSQL (package data and
// the SQL functions in schema lease).
//
// # Authorize, then compete
//
// Owning a lease is concurrency control, not access control: it decides which
// one of several authorized executions runs, never whether the caller may
// act on the session at all. The API makes that step explicit and
// unskippable: Try, Wait and Do accept only a Permit, and only
// Client.Authorize mints one, after the Authorizer you supply allowed the
// request.
//
//	authz := lease.AuthorizerFunc(func(ctx context.Context, r lease.Request) error {
//		if !user.MemberOf(r.Key.Account) {
//			return errors.New("not a member of this account")
//		}
//		return nil
//	})
//	permit, err := client.Authorize(ctx, authz, key, "worker-7")
//	if err != nil {
//		return err // errors.Is(err, lease.ErrDenied): it never competed
//	}
//
//	// Wait for the lease, work while it is held, release once the function returned.
//	err = client.Do(ctx, permit, lease.BusyWait, func(ctx context.Context, l *lease.Lease) error {
//		// ctx is cancelled the moment ownership might be lost; context.Cause(ctx) says why.
//		// ... the long part (call the model, run tools) goes here, with ctx ...
//		return l.FencedTx(ctx, store.Pool(), func(ctx context.Context, tx pgx.Tx) error {
//			// Only the protected write in here: while it is open, nobody can take over.
//			_, err := tx.Exec(ctx, `INSERT INTO reply (session, body, fence) VALUES ($1, $2, $3)`,
//				key.Session, answer, l.Fence())
//			return err
//		})
//	})
//
// The package's Example is this code in full, from data.Open to the
// handling of the errors, as docs/run.md shows it; README.md shows this
// part of it.
//
// # Valid before work: the local safe deadline
//
// Expiry is decided by the database clock. The holder cannot read that clock
// without a round trip, so it keeps a local safe deadline on its own
// monotonic clock: the time it sent the last confirmed acquire or renew
// request, plus TTL, minus Config.SafetyMargin. The server set the expiry at
// least TTL after that send time, so while the local deadline has not passed
// the lease is the holder's. A grant whose reply arrives after its deadline
// is treated as not held (and released). This is river's "trust window".
//
// # Keep, at risk, lost
//
// A heartbeat renews every Config.RenewInterval (default TTL/3). Each
// confirmed renewal moves the deadline to that renewal's send time + TTL -
// margin. A Client's leases whose renewals fall due together are renewed in
// one call (data.Store.RenewMany: one statement, one round trip), and a
// lease due within half an interval of such a batch joins it early, so
// that a process holding many leases sends one renewal per interval, not
// one per lease. Each lease is still decided alone (a rejected one is lost
// alone), its deadline counts from the send time of the call that renewed
// it, and it waits for that call only until its own attempt's deadline. The
// Lease's State goes:
//
//	Held ⇄ AtRisk → Lost
//	  └───────┴───→ Released
//
// AtRisk (Chubby's jeopardy) means a renewal failed but the deadline has not
// passed: get ready to stop. Lost cancels Lease.Context with a *LostError
// whose reason says why: ErrPreempted, ErrForceReleased, ErrTakenOver or
// ErrRejected (the database says someone else owns it now) or ErrExpired
// (the local deadline passed without a confirmed renewal: the database is
// unreachable, or this process was paused); after Lease.HandOver it is
// ErrHandedOver, which Do does not report as a loss. Because the margin is subtracted, a holder cut off from the
// database stops before the server lets anyone else in. Nothing revives a
// lost lease: renewals name the exact run id, and the server refuses (and
// records as renew_rejected) a renewal of a lease that ended.
//
// Release stops the heartbeat, cancels the context with ErrReleased, and
// deletes the row if this run still holds it. It is idempotent and runs on a
// context detached from cancellation. Do calls it after its function
// returned, and reports a loss only if the lease was held.
//
// # Waiting
//
// Wait is woken by released, force_released and taken_over notifications for
// its key (one listener per Client, shared by all waiters), so a handoff
// takes milliseconds. A fallback poll covers a lost notification: every
// Config.PollInterval with jitter, or, when the holder's lease ends sooner
// on the server clock, 1-11 ms after that end, so an expired lease (its
// holder killed) is taken over within milliseconds of its expiry, not a
// fraction of the TTL later.
//
// Where LISTEN cannot work (a transaction pooler without a listen DSN, a
// LISTEN error) the listener polls lease.event instead, every 250 ms by
// default, and the same transitions wake the waiters from its rows: a
// handoff then takes up to the poll interval. Config.Listener (or the
// store's data.Options) sets the listen DSN and the interval; the store's
// OnPoll hook hears once why.
//
// # Fencing
//
// A lease cannot give mutual exclusion on its own: a holder paused past its
// TTL (GC, SIGSTOP, a frozen VM) resumes believing it still owns the
// session, and may act before its heartbeat notices. Fence returns the
// fencing token, which rises with every change of owner (with gaps: a
// contended takeover draws a value before it loses; compare fences, never
// count them). The protected resource must check it on every write:
//
//   - In the lease's own database, write with Lease.FencedTx. It runs the
//     fence check (Lease.CheckFence, or Token.Check, which locks the lease
//     row FOR SHARE, so no takeover can commit between the check and the
//     write) in a transaction that the server bounds by the lease's
//     remaining safe time; a stale run gets ErrStale and writes nothing.
//     Put only the write in it: the open transaction blocks every takeover.
//     A writer frozen inside it holds the row for that bound at most (in a
//     transaction of your own with CheckFence and no bound, until it
//     resumes).
//   - In an external resource (another database, a file store, an API),
//     keep the highest token seen per key and reject writes with a lower one,
//     atomically with the write: for example
//     UPDATE doc SET body = $1, fence = $2 WHERE id = $3 AND fence <= $2,
//     and treat "no row updated" as stale.
//
// Programs not written in Go get the same from `leasetop run`, which runs a
// command while holding a lease and passes the token in the environment
// (see TokenFromEnv).
//
// # Measuring and testing
//
// Config.Metrics receives each acquire attempt, renewal, loss and period at
// risk, without key or run labels; package leaseprom records them in
// Prometheus collectors on the registry you choose. Package leasetest makes
// a lease end on a real database (a forced release, an expiry now, renewals
// that get no answer) so a test can check that the program stops and writes
// nothing.
package lease
