package cli

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/lease"
)

// cmdFollow prints a conversation's owner, then each change of owner as it
// happens (lease.Client.Follow), one JSON object per line, until
// interrupted: a second device follows the conversation from run to run.
// It needs only lease_reader. Exit 130/143/129 when interrupted, 1 error,
// 2 usage.
func cmdFollow(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "follow", "follow --account A --session S [--poll-row 2s] [--listen-dsn URL] [--poll 250ms] [--dsn URL]")
	dsn := dsnFlag(fs)
	listen := addListenFlags(fs)
	account := fs.String("account", "", "account id of the conversation (required)")
	session := fs.String("session", "", "session id of the conversation (required)")
	pollRow := fs.Duration("poll-row", 2*time.Second, "read the lease's row this often too: an attachment replaced and an expiry write no event")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	key := data.Key{Account: *account, Session: *session}
	switch {
	case fs.NArg() > 0:
		return usageErrorf("follow takes no arguments, got %q", fs.Arg(0))
	case *account == "" || *session == "":
		return usageErrorf("follow needs --account and --session")
	case *pollRow < minPoll || *pollRow > maxPoll:
		return usageErrorf("--poll-row must be between %s and %s, got %s", minPoll, maxPoll, *pollRow)
	}
	if err := data.ValidateKey(key); err != nil {
		return &ExitError{Code: ExitUsage, Err: err}
	}
	opt, err := listen.options(env)
	if err != nil {
		return err
	}
	opt.OnPoll = printPoll(env.Stderr)
	store, err := openStoreWith(ctx, resolveDSN(env, *dsn), opt)
	if err != nil {
		return err
	}
	defer store.Close()
	client, err := lease.New(store, lease.Config{PollInterval: *pollRow})
	if err != nil {
		return err
	}
	defer client.Close()
	owners, err := client.Follow(ctx, key)
	if err != nil {
		return connError(err)
	}
	for o := range owners {
		if err := writeJSONLine(env.Stdout, ownerLine(o)); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// ownerJSON is one line of follow.
type ownerJSON struct {
	Account    string     `json:"account_id"`
	Session    string     `json:"session_id"`
	State      string     `json:"state"` // held, or free (released, expired, never held)
	RunID      *uuid.UUID `json:"run_id"`
	Holder     *string    `json:"holder"`
	Fence      *int64     `json:"fence"`
	Attachment *string    `json:"attachment"`
	ExpiresAt  *time.Time `json:"expires_at"`
	EventID    *int64     `json:"event_id"`   // the change's event, null when read from the row
	EventKind  *string    `json:"event_kind"` // acquired, taken_over, preempted, handed_over, released, force_released
}

// ownerLine is o as follow prints it.
func ownerLine(o lease.Owner) ownerJSON {
	j := ownerJSON{Account: o.Key.Account, Session: o.Key.Session, State: "held", RunID: nonNil(o.RunID),
		Fence: nonZeroInt(o.Fence), ExpiresAt: nonZeroTime(o.ExpiresAt), EventID: nonZeroInt(o.By.ID)}
	if o.Free {
		j.State = "free"
	}
	if o.Holder != "" {
		j.Holder = &o.Holder
	}
	if o.Attachment != "" {
		j.Attachment = &o.Attachment
	}
	if o.By.Kind != "" {
		k := string(o.By.Kind)
		j.EventKind = &k
	}
	return j
}
