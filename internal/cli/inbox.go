package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/termtext"
	"github.com/leasetop/leasetop/lease"
)

// inboxPoll is how often inbox --wait reads again when no notification
// came (its listener's own catch-up and polls come first).
const inboxPoll = time.Second

// cmdInbox is for the command `leasetop run` runs: it prints the next
// steer sent to the run's conversation (one line: its text; --json: one
// object) and acknowledges it once printed. It takes the run from the
// environment run gives its command (LEASETOP_ACCOUNT_ID, LEASETOP_SESSION_ID,
// LEASETOP_RUN_ID, LEASETOP_FENCE) and the database from --dsn or
// DATABASE_URL (run --pass-db-env passes it on). Cancels are not printed:
// run --on-cancel stop handles them. Exit 0 printed one, 5 none (within
// --wait), 4 the run no longer holds the conversation, 2 no run in the
// environment, 1 error.
func cmdInbox(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "inbox", "inbox [--wait 30s] [--json] [--dsn URL] (in the command leasetop run runs)")
	dsn := dsnFlag(fs)
	wait := fs.Duration("wait", 0, "wait this long for a steer when none is waiting (default: do not wait)")
	asJSON := fs.Bool("json", false, "print the message as one JSON object (id, kind, body, sender, login, sent_at, expires_at, carried_from)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return usageErrorf("inbox takes no arguments, got %q", fs.Arg(0))
	case *wait < 0 || *wait > time.Hour:
		return usageErrorf("--wait must be between 0 and 1h, got %s", *wait)
	}
	token, err := lease.TokenFromEnv(env.Getenv)
	if err != nil {
		return usageErrorf("inbox: %v: run it in the command of leasetop run", err)
	}
	store, err := openStore(ctx, resolveDSN(env, *dsn))
	if err != nil {
		return err
	}
	defer store.Close()
	m, err := nextSteer(ctx, store, token, *wait)
	switch {
	case errors.Is(err, data.ErrNotHeld):
		return &ExitError{Code: ExitLost, Err: fmt.Errorf("run %s no longer holds %s: its messages go to the next run", token.PublicRunID(), markID(token.Key.String()))}
	case errors.Is(err, errNoSteer):
		return &ExitError{Code: ExitNothing, Err: fmt.Errorf("no message waits for %s", markID(token.Key.String()))}
	case err != nil:
		return connError(err)
	}
	if err := printMessage(env.Stdout, m, *asJSON); err != nil {
		return err
	}
	out, err := store.AckMessage(ctx, token.Key, token.RunID, m.ID)
	switch {
	case errors.Is(err, data.ErrNotHeld):
		return &ExitError{Code: ExitLost, Err: fmt.Errorf("printed message %d, but run %s no longer holds %s: the next run gets it again", m.ID, token.PublicRunID(), markID(token.Key.String()))}
	case err != nil:
		return connError(err)
	case out == data.AckExpired:
		return &ExitError{Code: ExitFailure, Err: fmt.Errorf("printed message %d, but it expired before it was acknowledged", m.ID)}
	}
	return nil
}

// errNoSteer: no steer waits (within --wait).
var errNoSteer = errors.New("no steer")

// nextSteer returns the oldest steer waiting for the run, waiting up to
// wait for one: it reads again on every notification its listener hears
// for the key (and every inboxPoll).
func nextSteer(ctx context.Context, store *data.Store, t lease.Token, wait time.Duration) (data.Message, error) {
	if m, err := firstSteer(ctx, store, t); err == nil || wait <= 0 || !errors.Is(err, errNoSteer) {
		return m, err
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	w := &steerWait{store: store, t: t, stop: cancel, poll: time.NewTicker(inboxPoll), err: errNoSteer}
	defer w.poll.Stop()
	_ = store.NewListener(data.ListenerConfig{CatchUp: -1}).Serve(wctx, w) // returns once w found one or wait ended
	if ctx.Err() != nil {
		return data.Message{}, ctx.Err()
	}
	if errors.Is(w.err, errNoSteer) {
		return firstSteer(ctx, store, t) // one last look
	}
	return w.m, w.err
}

// steerWait is nextSteer's handler of its listener: it reads again on a
// notification of a message sent to the key, a resync and each poll, and
// stops the listener once a read found a steer or failed.
type steerWait struct {
	store *data.Store
	t     lease.Token
	stop  context.CancelFunc
	poll  *time.Ticker
	m     data.Message
	err   error // errNoSteer until a read found one or failed
}

// HandleDelivery reads again when d names a message sent to the key.
func (w *steerWait) HandleDelivery(ctx context.Context, d data.Delivery) {
	if d.Resync || namesMessage(d.Events, w.t.Key) {
		w.read(ctx)
	}
}

// Timer is the poll's.
func (w *steerWait) Timer() <-chan time.Time { return w.poll.C }

// HandleTimer reads again.
func (w *steerWait) HandleTimer(ctx context.Context) { w.read(ctx) }

// read looks for a steer, and stops the wait once one is found or a read
// failed (not because the wait ended: the caller's last look does that).
func (w *steerWait) read(ctx context.Context) {
	if !errors.Is(w.err, errNoSteer) {
		return
	}
	m, err := firstSteer(ctx, w.store, w.t)
	if errors.Is(err, errNoSteer) || (err != nil && ctx.Err() != nil) {
		return
	}
	w.m, w.err = m, err
	w.stop()
}

// namesMessage reports whether one of evs is a message sent to key: a
// notification, only a hint to read (the receive is the truth).
func namesMessage(evs []data.Event, key data.Key) bool {
	for _, ev := range evs {
		if ev.Kind == data.KindMessageSent && ev.Key == key {
			return true
		}
	}
	return false
}

// firstSteer receives what waits for the run and returns the oldest
// steer (a cancel is run's), errNoSteer when none waits.
func firstSteer(ctx context.Context, store *data.Store, t lease.Token) (data.Message, error) {
	ms, err := store.ReceiveMessages(ctx, t.Key, t.RunID, 0, data.MaxReceive)
	if err != nil {
		return data.Message{}, err
	}
	for _, m := range ms {
		if m.Kind == data.MessageSteer {
			return m, nil
		}
	}
	return data.Message{}, errNoSteer
}

// printMessage prints m's text as one line (made inert: termtext.Clean,
// which leaves the text lease.safe_text let through as it is), or one
// JSON object.
func printMessage(w io.Writer, m data.Message, asJSON bool) error {
	if asJSON {
		return writeJSONLine(w, messageJSON{ID: m.ID, Kind: string(m.Kind), Body: m.Body, Sender: m.Sender, Login: m.Actor,
			SentAt: m.SentAt, ExpiresAt: m.ExpiresAt, CarriedFrom: nonNil(m.CarriedFrom)})
	}
	_, err := fmt.Fprintln(w, termtext.Clean(m.Body, 0))
	return err
}

// messageJSON is inbox --json's object.
type messageJSON struct {
	ID          int64      `json:"id"`
	Kind        string     `json:"kind"`
	Body        string     `json:"body"`
	Sender      string     `json:"sender"`
	Login       string     `json:"login"`
	SentAt      time.Time  `json:"sent_at"`
	ExpiresAt   time.Time  `json:"expires_at"`
	CarriedFrom *uuid.UUID `json:"carried_from"`
}
