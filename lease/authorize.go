package lease

import (
	"context"
	"errors"
	"fmt"

	"github.com/leasetop/leasetop/internal/data"
)

// Request is what an Authorizer decides on: who wants to compete for which
// session's lease.
type Request struct {
	Key Key
	// Holder is the label the run will show as the lease's holder.
	Holder string
	// NotPreemptible declares that the run must not be preempted (a payment
	// in progress): Client.Preempt of its lease is refused with
	// ErrNotPreemptible. Default false: a member of the database group
	// lease_preempt may take the lease from it.
	NotPreemptible bool
	// Attachment is a short text the run publishes on its lease from its
	// first moment, such as the id of the stream it writes to, so that a
	// device that finds the session busy can join it (HeldError.Attachment).
	// At most data.MaxAttachmentBytes, no control, bidirectional or
	// invisible characters; never a secret: whoever may read the lease table
	// reads it. Lease.SetAttachment replaces it later.
	Attachment string
	// Pool is the pool within its account the run counts against besides
	// the account ("" none): when an operator set a limit on the account or
	// the pool (leasetop limit set) and it is full, the run is refused as if
	// the session were held, with a *data.LimitError (ErrAtLimit) naming the
	// runs that hold the slots, and Wait waits for one of them to end.
	Pool string
	// Priority is the run's priority, recorded on its lease (0 the default;
	// higher wins). In an account at its limit, Client.Preempt by a run of a
	// higher priority may take this run's slot, ending its lease, unless it
	// is NotPreemptible. The Authorizer sees it and may refuse a priority the
	// caller may not claim.
	Priority int16
}

// options are the holder options req declares.
func (req Request) options() data.AcquireOptions {
	return data.AcquireOptions{NotPreemptible: req.NotPreemptible, Attachment: req.Attachment,
		Pool: req.Pool, Priority: req.Priority}
}

// Authorizer decides whether the caller may compete for a session's lease.
// It is where authentication and authorization happen (for example: is the
// user in ctx a member of Key.Account?). Owning the lease never replaces it:
// a lease only says which one of several authorized executions runs.
//
// Return nil to allow; any error denies, and Authorize wraps it with
// ErrDenied.
type Authorizer interface {
	Authorize(ctx context.Context, req Request) error
}

// AuthorizerFunc adapts a function to Authorizer.
type AuthorizerFunc func(ctx context.Context, req Request) error

// Authorize calls f.
func (f AuthorizerFunc) Authorize(ctx context.Context, req Request) error { return f(ctx, req) }

// Permit is the proof that an Authorizer allowed a Request. Only
// Client.Authorize mints one, and Try, Wait and Do accept nothing else:
// a program cannot compete for a lease without passing its authorization
// step. The zero Permit is refused with ErrNoPermit.
//
// A Permit belongs to the Client that minted it and may be used for several
// acquisitions; authorize again when the authorization might have changed.
type Permit struct {
	client *Client
	req    Request
}

// Request returns what was authorized.
func (p Permit) Request() Request { return p.req }

// Authorize validates key and holder, asks authz whether the caller may
// compete for key's lease, and returns the Permit that Try, Wait and Do
// need. A nil authz, invalid input (errors.Is(err, data.ErrInvalid)) and a
// refusal (errors.Is(err, ErrDenied)) return an error and no Permit.
func (c *Client) Authorize(ctx context.Context, authz Authorizer, key Key, holder string) (Permit, error) {
	return c.AuthorizeRequest(ctx, authz, Request{Key: key, Holder: holder})
}

// AuthorizeRequest is Authorize for a whole Request: with it a run declares
// its holder options (NotPreemptible, Attachment), which the Authorizer sees
// and may refuse, like the key and the label.
func (c *Client) AuthorizeRequest(ctx context.Context, authz Authorizer, req Request) (Permit, error) {
	if authz == nil {
		return Permit{}, errors.New("authorize: nil Authorizer")
	}
	if err := data.ValidateKey(req.Key); err != nil {
		return Permit{}, err
	}
	if err := data.ValidateHolder(req.Holder); err != nil {
		return Permit{}, err
	}
	if err := data.ValidateAttachment(req.Attachment); err != nil {
		return Permit{}, err
	}
	if err := authz.Authorize(ctx, req); err != nil {
		return Permit{}, fmt.Errorf("%w: %w", ErrDenied, err)
	}
	return Permit{client: c, req: req}, nil
}

// check returns ErrNoPermit unless c minted p.
func (c *Client) check(p Permit) error {
	if p.client != c || c == nil {
		return ErrNoPermit
	}
	return nil
}
