package lease

import (
	"context"
	"errors"
	"time"

	"github.com/leasetop/leasetop/internal/data"
)

// renewOne renews l alone. A lease that watches its asks (Lease.Asked)
// renews with data.Store.RenewWatch, which reads the pending ask in the
// same round trip, and is told of it; a login that may not read asks
// renews plainly from then on.
func (r *renewer) renewOne(ctx context.Context, l *Lease) (time.Time, error) {
	if !l.asks.watching.Load() || r.noAskRead.Load() {
		return r.store.Renew(ctx, l.token.Key, l.token.RunID, r.ttl)
	}
	exp, ask, err := r.store.RenewWatch(ctx, l.token.Key, l.token.RunID, r.ttl)
	if errors.Is(err, data.ErrPermission) || errors.Is(err, data.ErrSchema) {
		r.noAskRead.Store(true) // nothing was renewed: renew plainly now
		return r.store.Renew(ctx, l.token.Key, l.token.RunID, r.ttl)
	}
	if err == nil {
		l.noteAsk(ask)
	}
	return exp, err
}
