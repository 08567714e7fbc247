package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/termtext"
	"github.com/leasetop/leasetop/lease"
)

// What a holding leasetop run does with a cancel message (--on-cancel).
const (
	onCancelIgnore = "ignore" // leave it (the default): a command that knows nothing of cancels is not stopped by one
	onCancelStop   = "stop"   // acknowledge it, stop the command, exit ExitCancelled
)

// steerOptions are leasetop run's flags about the inbox: the steering
// device's (--on-busy steer) and the holder's (--on-cancel).
type steerOptions struct {
	message   string             // --message: the steer (else run's stdin)
	messageOK bool               // --message was given
	until     lease.MessageState // --steer-wait
	stop      bool               // --on-cancel stop
}

// steerFlags are the flags as parsed.
type steerFlags struct {
	message  *string
	until    *string
	onCancel *string
}

func addSteerFlags(fs *flagSet) steerFlags {
	return steerFlags{
		message: fs.String("message", "", "with --on-busy steer: the message to send the holder (default: one line read from stdin)"),
		until: fs.String("steer-wait", string(lease.MessageAcked), "with --on-busy steer: exit once the holder's run acknowledged the message (acked) "+
			"or received it (delivered); exit 9 if it expires first"),
		onCancel: fs.String("on-cancel", onCancelIgnore, "when a cancel message (leasetop send --cancel) reaches this run: ignore it, "+
			"or stop (send CMD SIGTERM, SIGKILL after --grace, release, exit 8); for a CMD that expects it"),
	}
}

// options checks the flags against each other and the busy flags (set
// names the flags given on the command line).
func (f steerFlags) options(set map[string]bool, busy busyOptions) (steerOptions, error) {
	o := steerOptions{message: *f.message, messageOK: set["message"]}
	if busy.onBusy != lease.BusySteer {
		for _, name := range []string{"message", "steer-wait"} {
			if set[name] {
				return o, usageErrorf("run: --%s is for --on-busy steer", name)
			}
		}
	}
	until, err := parseWaitState(*f.until)
	if err != nil || until == "" {
		return o, usageErrorf("run: --steer-wait must be delivered or acked, got %s", termtext.Quote(*f.until))
	}
	o.until = until
	switch *f.onCancel {
	case onCancelIgnore:
	case onCancelStop:
		o.stop = true
	default:
		return o, usageErrorf("run: --on-cancel must be ignore or stop, got %s", termtext.Quote(*f.onCancel))
	}
	if o.messageOK {
		if err := data.ValidateMessage(data.MessageSteer, o.message, "", "k", lease.DefaultMessageTTL); err != nil {
			return o, usageErrorf("run: --message: %v", err)
		}
	}
	return o, nil
}

// steerHolder is --on-busy steer: the session is busy, so instead of
// running the command this run sends the holder a steer (--message, else
// one line of stdin) and exits once it was acknowledged (or delivered:
// --steer-wait). It never holds the lease.
func steerHolder(ctx context.Context, env Env, client *lease.Client, permit lease.Permit, held *lease.HeldError, opts runOptions) error {
	body := opts.steer.message
	if !opts.steer.messageOK {
		var err error
		if body, err = readMessageLine(env.Stdin); err != nil {
			return err
		}
	}
	m := lease.Message{Kind: lease.SteerMessage, Body: body, IdempotencyKey: uuid.NewString()}
	fmt.Fprintf(env.Stderr, "leasetop: steering: %s\n", heldMessage(held))
	sent, err := client.SendWait(ctx, permit, m, opts.steer.until)
	if err != nil && sent.ID == 0 {
		return sendError(err)
	}
	warnf(env.Stderr, "%s %d %s", sent.Kind, sent.ID, whereText(sent.MessageStatus))
	return sendError(err)
}

// cancelled reports whether the lease's context ended with a cancel
// message.
func cancelled(l *lease.Lease) bool { return errors.Is(l.Err(), lease.ErrCancelled) }
