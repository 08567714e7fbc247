package ui

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

// The accounts' limits (sql/limits.sql): the accounts view (modeAccounts)
// lists each limit's slots used, queued tickets and saturation, and the
// table's SLOT column, shown only while some lease holds a slot, says which
// slots a session's lease holds. A slot frees at its lease's expiry without
// an event, so the limits are read, every queuePollEvery with the queue
// lengths, in one query per database (data.Store.Limits), not followed,
// while there are limits: once a read found none, the next read waits for
// a limit_set event or a resync (which may have missed one), or for the
// accounts view to open. What is kept is per held slot, never per lease.

// AccountLimit is one limit of a database the monitor watches and its use,
// with the context it is in ("" in a monitor of one database).
type AccountLimit struct {
	Context string
	data.LimitUsage
}

// limitsMsg is every limit, as read.
type limitsMsg struct {
	limits []AccountLimit
	err    error
	wakes  int // limitPoll.wakes when the read started
}

// limitPoll is the last read of the limits.
type limitPoll struct {
	list    []AccountLimit         // as read, fullest first (data.SortBySaturation), by context
	slots   map[monitor.Key]string // the slots each session's lease holds: "2", "2 deep 1"
	readAt  time.Time
	reading bool
	read    bool  // a read has come back
	err     error // the last read's error
	// none: the last read found no limit; no read until a limit_set event
	// or a resync says there may be one (wake).
	none  bool
	wakes int // how many times wake was called: a read that started before one does not set none
}

// wake asks for a read at the next poll: a limit may have been set.
func (p *limitPoll) wake() { p.none, p.readAt, p.wakes = false, time.Time{}, p.wakes+1 }

func (p *limitPoll) anySlots() bool              { return len(p.slots) > 0 }
func (p *limitPoll) slotOf(k monitor.Key) string { return p.slots[k] }

// pollLimits reads the limits if the last read is older than
// queuePollEvery, none is in flight, and the last one found limits (or a
// limit may have been set since: limitPoll.wake).
func (m *Model) pollLimits() tea.Cmd {
	read := m.cfg.Source.LimitsFunc
	if read == nil || m.limits.reading || m.limits.none || m.now.Sub(m.limits.readAt) < queuePollEvery {
		return nil
	}
	m.limits.reading = true
	wakes := m.limits.wakes
	return func() tea.Msg {
		l, err := read()
		return limitsMsg{limits: l, err: err, wakes: wakes}
	}
}

func (m *Model) onLimits(msg limitsMsg) {
	p := &m.limits
	p.reading, p.read, p.err = false, true, msg.err
	if msg.wakes == p.wakes { // else a wake since asks for the next read at once
		p.readAt = m.cfg.Now()
	}
	if msg.err != nil { // a failed read keeps the last limits; the feed reports the connection
		return
	}
	p.list = msg.limits
	p.none = len(p.list) == 0 && msg.wakes == p.wakes
	p.slots = nil
	for _, l := range p.list {
		for _, h := range l.Holders {
			if p.slots == nil {
				p.slots = map[monitor.Key]string{}
			}
			k := monitor.Key{Context: l.Context, Key: data.Key{Account: l.Account, Session: h.Session}}
			word := fmt.Sprint(h.Slot)
			if l.Pool != "" {
				word = l.Pool + " " + word
			}
			if have := p.slots[k]; have != "" {
				// The account's own slot first, then the pool's.
				if l.Pool == "" {
					word, have = have, word
				}
				word = have + " " + word
			}
			p.slots[k] = word
		}
	}
}

// accountSort is the accounts view's order.
type accountSort int

const (
	accountsBySaturation accountSort = iota // fullest first (the default)
	accountsByName                          // by context, account and pool
	numAccountSorts
)

func (s accountSort) String() string {
	if s == accountsByName {
		return "account"
	}
	return "saturation"
}

// accountRows is the limits the accounts view lists: the filter's (by
// account), in the view's order.
func (m *Model) accountRows() []AccountLimit {
	key := accountRowsKey{ok: true, readAt: m.limits.readAt, sortBy: m.acct.sortBy, filter: m.filter}
	if m.acct.rowsOf != key {
		m.acct.rows, m.acct.rowsOf = m.listAccountRows(), key
	}
	return m.acct.rows
}

// listAccountRows lists accountRows' answer.
func (m *Model) listAccountRows() []AccountLimit {
	rows := slices.Clone(m.limits.list)
	if m.filter != "" {
		f := strings.ToLower(m.filter)
		rows = slices.DeleteFunc(rows, func(l AccountLimit) bool {
			return !strings.Contains(strings.ToLower(l.Account), f) && !strings.Contains(strings.ToLower(l.Pool), f)
		})
	}
	if m.acct.sortBy == accountsByName {
		slices.SortStableFunc(rows, func(a, b AccountLimit) int {
			return cmp.Or(strings.Compare(a.Context, b.Context), strings.Compare(a.Account, b.Account), strings.Compare(a.Pool, b.Pool))
		})
	} else {
		slices.SortStableFunc(rows, func(a, b AccountLimit) int {
			return cmp.Or(cmp.Compare(b.Saturation(), a.Saturation()), cmp.Compare(b.Queued, a.Queued),
				strings.Compare(a.Context, b.Context), strings.Compare(a.Account, b.Account), strings.Compare(a.Pool, b.Pool))
		})
	}
	return rows
}

// slotLines adds the detail view's slot field: which slots of its account's
// limits the session's lease holds, and how full each limit is. Nothing when
// it holds none.
func (m *Model) slotLines(field func(name, value string), key monitor.Key) {
	if m.limits.slotOf(key) == "" {
		return
	}
	var words []string
	for _, l := range m.limits.list {
		if l.Context != key.Context || l.Account != key.Account {
			continue
		}
		for _, h := range l.Holders {
			if h.Session != key.Session {
				continue
			}
			what := "the account's"
			if l.Pool != "" {
				what = "pool " + idText(l.Pool, 24) + "'s"
			}
			words = append(words, fmt.Sprintf("slot %d of %s %d (%d/%d used)", h.Slot, what, l.Slots, l.Used, l.Slots))
		}
	}
	field("slot", strings.Join(words, ", ")+m.styles.dim.Render(fmt.Sprintf("  (read %s ago)", compact(m.now.Sub(m.limits.readAt)))))
}
