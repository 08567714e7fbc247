package lease

import (
	"context"
	"errors"
	"fmt"

	"github.com/leasetop/leasetop/data"
)

// Request is what an Authorizer decides on: who wants to compete for which
// session's lease.
type Request struct {
	Key Key
	// Holder is the label the run will show as the lease's holder.
	Holder string
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
	if authz == nil {
		return Permit{}, errors.New("authorize: nil Authorizer")
	}
	if err := data.ValidateKey(key); err != nil {
		return Permit{}, err
	}
	if err := data.ValidateHolder(holder); err != nil {
		return Permit{}, err
	}
	req := Request{Key: key, Holder: holder}
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
