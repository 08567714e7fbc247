package audit

import (
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
)

// replacement is the run that took a session from another on purpose
// (a preempt), and when: from then on the replaced run must write nothing.
type replacement struct {
	run   uuid.UUID
	fence int64
	at    time.Time
	kind  data.Kind
}

// replacedSilent checks invariant 5: no write of a run that was preempted
// was accepted from a transaction that began at or after the preempt (the
// fence that replaced it). Invariant 3 covers every stale write; this one
// names the promise a preempt makes, with the run that replaced the writer.
func (c *checker) replacedSilent(rows []outputRow) {
	for _, r := range rows {
		rep, ok := c.replaced[r.run]
		if !r.accepted || !ok || r.txStartedAt.Before(rep.at) {
			continue
		}
		c.fail(ReplacedSilent, r.key, "write %d by run %s (fence %d) was accepted from a transaction that began at %s, after run %s (fence %d) replaced it (%s at %s)",
			r.id, short(r.run), r.fence, clock(r.txStartedAt), short(rep.run), rep.fence, rep.kind, clock(rep.at))
	}
}
