package monitor

import (
	"math"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
)

// leaseTable is the State's leases in columns, one slot per lease: about
// 100 bytes a lease where a map of data.Lease took about 1 KB with what
// hung off it (the target: a million leases in 300 MB). The texts many leases
// share (account, holder label, attachment) are interned; instants are unix
// nanoseconds; the key index is an open-addressed table of slot numbers.
//
// A freed slot is reused by a later lease; its generation changes then, so
// a RowRef taken before (a screen's sorted rows) sees that its lease is gone.
// A reset (a resync) starts a new epoch: every RowRef of the old one is
// stale.
type leaseTable struct {
	accts interner // account ids (apart, so a scan can count by account in an array of them)
	strs  interner // holder labels and attachments
	index keyIndex
	epoch uint32
	order keyOrder // by account then session, for listing rows
	// scratch is the memory listing rows works in: kept across a reset
	// (a resync), not shared by a clone.
	scratch rowScratch

	ctx      []uint8  // the context (State.members) it belongs to: 0 in a State of one database
	account  []uint32 // interned in accts
	session  []string
	holder   []uint32 // interned
	attach   []uint32 // interned
	run      []uuid.UUID
	fence    []int64
	acquired []int64 // unix ns (zeroTime for the zero time)
	renewed  []int64
	expires  []int64
	flags    []uint8
	gen      []uint32 // changes whenever the slot is freed

	free []int32 // freed slots, reused last in first out
	live int
}

const (
	slotLive           uint8 = 1 << iota // the slot holds a lease
	slotNotPreemptible                   // data.Lease.NotPreemptible
	slotSessionFolds                     // the session id has capitals or bytes beyond ASCII: a filter folds its case
	slotRowRead                          // NotPreemptible and the attachment are the row's (a grant's event says neither)
)

// zeroTime stands for the zero time.Time, whose UnixNano is undefined.
const zeroTime = math.MinInt64

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return zeroTime
	}
	return t.UnixNano()
}

func fromUnixNano(ns int64) time.Time {
	if ns == zeroTime {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// reset empties the table, with room for n leases, and starts a new epoch.
func (t *leaseTable) reset(n int) {
	*t = leaseTable{epoch: t.epoch + 1, accts: newInterner(), strs: newInterner(), scratch: t.scratch}
	t.index.init(n)
	t.ctx = make([]uint8, 0, n)
	t.account = make([]uint32, 0, n)
	t.session = make([]string, 0, n)
	t.holder = make([]uint32, 0, n)
	t.attach = make([]uint32, 0, n)
	t.run = make([]uuid.UUID, 0, n)
	t.fence = make([]int64, 0, n)
	t.acquired = make([]int64, 0, n)
	t.renewed = make([]int64, 0, n)
	t.expires = make([]int64, 0, n)
	t.flags = make([]uint8, 0, n)
	t.gen = make([]uint32, 0, n)
}

// clone returns an independent copy.
func (t *leaseTable) clone() leaseTable {
	c := *t
	c.accts, c.strs = t.accts.clone(), t.strs.clone()
	c.index.slots = slices.Clone(t.index.slots)
	c.order, c.scratch = t.order.clone(), rowScratch{}
	c.ctx, c.account, c.session, c.holder = slices.Clone(t.ctx), slices.Clone(t.account), slices.Clone(t.session), slices.Clone(t.holder)
	c.attach, c.run, c.fence = slices.Clone(t.attach), slices.Clone(t.run), slices.Clone(t.fence)
	c.acquired, c.renewed, c.expires = slices.Clone(t.acquired), slices.Clone(t.renewed), slices.Clone(t.expires)
	c.flags, c.gen, c.free = slices.Clone(t.flags), slices.Clone(t.gen), slices.Clone(t.free)
	return c
}

// slots is the number of slots, live or free.
func (t *leaseTable) slots() int { return len(t.flags) }

// alive reports whether slot i holds a lease.
func (t *leaseTable) alive(i int32) bool { return t.flags[i]&slotLive != 0 }

// find returns the slot of key in context c.
func (t *leaseTable) find(c uint8, key data.Key) (int32, bool) {
	acct, ok := t.accts.lookup(key.Account)
	if !ok {
		return 0, false
	}
	return t.index.find(t, c, acct, key.Session)
}

// key returns slot i's key.
func (t *leaseTable) key(i int32) data.Key {
	return data.Key{Account: t.accts.name(t.account[i]), Session: t.session[i]}
}

// lease returns slot i's lease.
func (t *leaseTable) lease(i int32) data.Lease {
	return data.Lease{
		Key: t.key(i), RunID: t.run[i], Holder: t.strs.name(t.holder[i]), Fence: t.fence[i],
		AcquiredAt: fromUnixNano(t.acquired[i]), RenewedAt: fromUnixNano(t.renewed[i]), ExpiresAt: fromUnixNano(t.expires[i]),
		NotPreemptible: t.flags[i]&slotNotPreemptible != 0,
		Attachment:     t.strs.name(t.attach[i]),
	}
}

// put stores l, read from its row, in its key's slot if it has one, else
// in a new one, in context 0 (a Feed's resync reads one database).
func (t *leaseTable) put(l data.Lease) { t.store(0, l, slotRowRead) }

// granted stores l as a grant's event tells it, in context c: without its
// row's NotPreemptible and attachment, which the event does not carry.
func (t *leaseTable) granted(c uint8, l data.Lease) { t.store(c, l, 0) }

// declared sets slot i's NotPreemptible and attachment to its row's l,
// and reports whether they changed.
func (t *leaseTable) declared(i int32, l data.Lease) bool {
	flags := t.flags[i] | slotRowRead
	if l.NotPreemptible {
		flags |= slotNotPreemptible
	} else {
		flags &^= slotNotPreemptible
	}
	if flags == t.flags[i] && t.strs.name(t.attach[i]) == l.Attachment {
		return false
	}
	t.flags[i] = flags
	t.strs.release(t.attach[i])
	t.attach[i] = t.strs.intern(l.Attachment)
	return true
}

// store stores l in context c with flags, in its key's slot if it has one,
// else in a new one.
func (t *leaseTable) store(c uint8, l data.Lease, flags uint8) {
	flags |= slotLive
	if l.NotPreemptible {
		flags |= slotNotPreemptible
	}
	if folds(l.Session) {
		flags |= slotSessionFolds
	}
	if i, ok := t.find(c, l.Key); ok {
		t.strs.release(t.holder[i])
		t.strs.release(t.attach[i])
		t.set(i, l, flags)
		return
	}
	var i int32
	if n := len(t.free); n > 0 {
		i, t.free = t.free[n-1], t.free[:n-1]
	} else {
		i = int32(len(t.flags))
		t.ctx = append(t.ctx, 0)
		t.account, t.session, t.holder = append(t.account, 0), append(t.session, ""), append(t.holder, 0)
		t.attach, t.run, t.fence = append(t.attach, 0), append(t.run, uuid.Nil), append(t.fence, 0)
		t.acquired, t.renewed, t.expires = append(t.acquired, 0), append(t.renewed, 0), append(t.expires, 0)
		t.flags, t.gen = append(t.flags, 0), append(t.gen, 0)
	}
	t.ctx[i], t.account[i], t.session[i] = c, t.accts.intern(l.Account), l.Session
	t.set(i, l, flags)
	t.live++
	t.index.insert(t, i)
	t.order.noteAdded(i, len(t.flags))
}

func (t *leaseTable) set(i int32, l data.Lease, flags uint8) {
	t.holder[i], t.attach[i] = t.strs.intern(l.Holder), t.strs.intern(l.Attachment)
	t.run[i], t.fence[i] = l.RunID, l.Fence
	t.acquired[i], t.renewed[i], t.expires[i] = unixNano(l.AcquiredAt), unixNano(l.RenewedAt), unixNano(l.ExpiresAt)
	t.flags[i] = flags
}

// remove frees slot i.
func (t *leaseTable) remove(i int32) {
	t.index.remove(t, i)
	t.accts.release(t.account[i])
	t.strs.release(t.holder[i])
	t.strs.release(t.attach[i])
	t.ctx[i], t.account[i], t.session[i], t.holder[i], t.attach[i] = 0, 0, "", 0, 0
	t.flags[i] = 0
	t.gen[i]++
	t.free = append(t.free, i)
	t.live--
}

// ref names slot i's lease as it is now.
func (t *leaseTable) ref(i int32) RowRef { return RowRef{slot: i, gen: t.gen[i], epoch: t.epoch} }

// current reports whether r's lease is still in the table (possibly
// renewed or taken over since, under the same key).
func (t *leaseTable) current(r RowRef) bool {
	return r.epoch == t.epoch && int(r.slot) < len(t.flags) && t.gen[r.slot] == r.gen && t.alive(r.slot)
}

// folds reports whether s has a capital or a byte beyond ASCII: whether its
// lower case may differ from it.
func folds(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 0x80 || ('A' <= c && c <= 'Z') {
			return true
		}
	}
	return false
}
