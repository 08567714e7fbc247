package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/termtext"
	"github.com/leasetop/leasetop/lease"
)

// cmdSend sends a message to a conversation, for whichever run holds it
// (now or next): a steer, or with --cancel a cancel. With --wait it waits
// until the message was delivered to a run, or acknowledged. One line says
// where it is (--json: one object). Exit 0 sent (and reached --wait), 2 bad
// input or a key reused with another message (nothing sent), 3 the inbox is
// full (nothing sent), 9 --wait: the message expired first, 1 error.
func cmdSend(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "send", "send --account A --session S [--cancel] [--wait delivered|acked] [--key K] [--ttl 15m] [--sender LABEL] [--json] [--listen-dsn URL] [--poll 250ms] [--dsn URL] MESSAGE|-")
	dsn := dsnFlag(fs)
	listen := addListenFlags(fs)
	account := fs.String("account", "", "account id of the conversation (required)")
	session := fs.String("session", "", "session id of the conversation (required)")
	cancel := fs.Bool("cancel", false, "send a cancel: the run holding the conversation stops (MESSAGE, optional, says why)")
	wait := fs.String("wait", "", "wait until the message is delivered to a run (delivered) or acknowledged by it (acked); exit 9 if it expires first")
	key := fs.String("key", "", "idempotency key (at most 128 bytes): sending again with it and the same MESSAGE is the same message (default: a random one, printed)")
	ttl := fs.Duration("ttl", lease.DefaultMessageTTL, "how long the message waits to be acknowledged before it expires (at most 24h)")
	sender := fs.String("sender", "", `the label the run sees as the sender (default "leasetop send@HOST")`)
	asJSON := fs.Bool("json", false, "print where the message is as one JSON object")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	kind := lease.SteerMessage
	if *cancel {
		kind = lease.CancelMessage
	}
	until, err := parseWaitState(*wait)
	if err != nil {
		return err
	}
	k := data.Key{Account: *account, Session: *session}
	switch {
	case *account == "" || *session == "":
		return usageErrorf("send needs --account and --session")
	case fs.NArg() > 1:
		return usageErrorf("send takes one MESSAGE (quote it), got %d arguments", fs.NArg())
	case fs.NArg() == 0 && kind == lease.SteerMessage:
		return usageErrorf("send needs a MESSAGE (or - to read one line from stdin)")
	}
	if err := data.ValidateKey(k); err != nil {
		return &ExitError{Code: ExitUsage, Err: err}
	}
	body := fs.Arg(0)
	if body == "-" {
		if body, err = readMessageLine(env.Stdin); err != nil {
			return err
		}
	}
	m := lease.Message{Kind: kind, Body: body, IdempotencyKey: *key, TTL: *ttl}
	if m.IdempotencyKey == "" {
		m.IdempotencyKey = uuid.NewString()
	}
	label := *sender
	if label == "" {
		label = defaultSender()
	}
	if err := data.ValidateMessage(m.Kind, m.Body, label, m.IdempotencyKey, m.TTL); err != nil {
		return &ExitError{Code: ExitUsage, Err: fmt.Errorf("send: %w", err)}
	}
	opt, err := listen.options(env)
	if err != nil {
		return err
	}
	store, err := openStoreWith(ctx, resolveDSN(env, *dsn), opt)
	if err != nil {
		return err
	}
	defer store.Close()
	client, err := lease.New(store, lease.Config{PollInterval: time.Second})
	if err != nil {
		return err
	}
	defer client.Close()
	sent, err := sendMessage(ctx, client, k, label, m, until)
	if err != nil && sent.ID == 0 {
		return sendError(err)
	}
	if err := printSent(env.Stdout, sent, *asJSON); err != nil {
		return err
	}
	return sendError(err)
}

// sendMessage sends m to key labelled label, and waits until it reaches
// until when that is not "" (SendWait).
func sendMessage(ctx context.Context, client *lease.Client, key data.Key, label string, m lease.Message, until lease.MessageState) (lease.Sent, error) {
	p, err := client.Authorize(ctx, commandLineAuthorizer{}, key, label)
	if err != nil {
		return lease.Sent{}, usageErrorf("send: %v", err)
	}
	if until == "" {
		return client.Send(ctx, p, m)
	}
	return client.SendWait(ctx, p, m, until)
}

// parseWaitState reads --wait (send) and --steer-wait (run): delivered,
// acked, or "" for no wait.
func parseWaitState(s string) (lease.MessageState, error) {
	switch lease.MessageState(s) {
	case "", lease.MessageDelivered, lease.MessageAcked:
		return lease.MessageState(s), nil
	}
	return "", usageErrorf("--wait must be delivered or acked, got %s", termtext.Quote(s))
}

// sendError is the exit for a send that failed, or whose wait ended
// without reaching its state.
func sendError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, lease.ErrMessageExpired):
		return &ExitError{Code: ExitMessageExpired, Err: errors.New(lineOf(err))}
	case errors.Is(err, lease.ErrInboxFull):
		return &ExitError{Code: ExitBusy, Err: errors.New(lineOf(err) + "; nothing was sent")}
	case errors.Is(err, data.ErrMessageKeyReused):
		return &ExitError{Code: ExitUsage, Err: errors.New(lineOf(err) + "; nothing was sent")}
	}
	return connError(err)
}

// readMessageLine reads one message from r: one line, its newline
// dropped. More than one line, or more than data.MaxMessageBytes, is a
// usage error.
func readMessageLine(r io.Reader) (string, error) {
	b, err := io.ReadAll(io.LimitReader(bufio.NewReader(r), data.MaxMessageBytes+2))
	if err != nil {
		return "", fmt.Errorf("read the message from stdin: %w", err)
	}
	s := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	switch {
	case len(s) > data.MaxMessageBytes:
		return "", usageErrorf("the message on stdin is longer than %d bytes", data.MaxMessageBytes)
	case strings.ContainsAny(s, "\n\r"):
		return "", usageErrorf("the message on stdin has more than one line: a message is one line (send several messages)")
	}
	return s, nil
}

// defaultSender is "leasetop send@HOST", made a valid label.
func defaultSender() string {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown-host"
	}
	return termtext.Clean("leasetop send@"+host, data.MaxHolderBytes/4)
}

// printSent says where a sent message is: one line, or one JSON object.
func printSent(w io.Writer, s lease.Sent, asJSON bool) error {
	if asJSON {
		return writeJSONLine(w, sentJSON{
			Account: s.Key.Account, Session: s.Key.Session, ID: s.ID, IdempotencyKey: s.IdempotencyKey,
			Kind: string(s.Kind), State: string(s.State), RunID: nonNil(s.RunID), Fence: nonZeroInt(s.Fence),
			SentAt: s.SentAt, ExpiresAt: s.ExpiresAt, DeliveredAt: nonZeroTime(s.DeliveredAt),
			AckedAt: nonZeroTime(s.AckedAt), Created: s.Created,
		})
	}
	verb := "sent"
	if !s.Created {
		verb = "already sent:"
	}
	_, err := fmt.Fprintf(w, "%s %s %d to %s (key %s): %s\n", verb, s.Kind, s.ID, markID(s.Key.String()),
		termtext.Quote(s.IdempotencyKey), whereText(s.MessageStatus))
	return err
}

// whereText says where a message is, for a line a user reads.
func whereText(s lease.MessageStatus) string {
	switch s.State {
	case lease.MessageWaiting:
		return "waiting for a run"
	case lease.MessageDelivered:
		return fmt.Sprintf("delivered to run %s at fence %d", s.RunID, s.Fence)
	case lease.MessageAcked:
		return fmt.Sprintf("acknowledged by run %s at fence %d", s.RunID, s.Fence)
	case lease.MessageExpired:
		return "expired unacknowledged"
	}
	return termtext.Clean(string(s.State), 20)
}

// sentJSON is send --json's object.
type sentJSON struct {
	Account        string     `json:"account_id"`
	Session        string     `json:"session_id"`
	ID             int64      `json:"id"`
	IdempotencyKey string     `json:"key"`
	Kind           string     `json:"kind"`
	State          string     `json:"state"`
	RunID          *uuid.UUID `json:"run_id"`
	Fence          *int64     `json:"fence"`
	SentAt         time.Time  `json:"sent_at"`
	ExpiresAt      time.Time  `json:"expires_at"`
	DeliveredAt    *time.Time `json:"delivered_at"`
	AckedAt        *time.Time `json:"acked_at"`
	Created        bool       `json:"created"`
}

// writeJSONLine writes v as one line of JSON, inert on a terminal
// (termtext.JSON).
func writeJSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", termtext.JSON(b))
	return err
}

func nonNil(u uuid.UUID) *uuid.UUID {
	if u == uuid.Nil {
		return nil
	}
	return &u
}

func nonZeroInt(n int64) *int64 {
	if n == 0 {
		return nil
	}
	return &n
}

func nonZeroTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
