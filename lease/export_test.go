package lease

import "time"

// SetBatchHook has c call f before each batch of renewals it sends: n
// renewals in one call (RenewMany; Renew for a batch of one), sent at sent.
// Set it before the first lease.
func SetBatchHook(c *Client, f func(n int, sent time.Time)) { c.renewer.onBatch = f }
