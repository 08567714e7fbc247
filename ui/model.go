package ui

import (
	"fmt"
	"time"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/keymap"
	"github.com/leasetop/leasetop/monitor"
	"github.com/leasetop/leasetop/theme"
)

// Source is how the model reaches the outside world. Each function may
// block; the model calls them only inside tea.Cmds. A nil function disables
// what it serves (ReleaseFunc and ClearQueueFunc are nil in read-only mode).
type Source struct {
	// NextFunc waits for the feed's next batch; false when the feed stopped.
	NextFunc func() (monitor.Batch, bool)
	// ResyncFunc asks the feed to re-read everything; it must not block.
	ResyncFunc func()
	// HistoryFunc reads a session's most recent events, newest first.
	HistoryFunc func(key monitor.Key) ([]data.Event, error)
	// LockersFunc reads the transactions that hold a session's lease row
	// locked (a fenced write in progress, or one stuck open: then no
	// takeover of the expired lease can commit), for the detail view.
	LockersFunc func(key monitor.Key) ([]data.Locker, error)
	// QueuesFunc reads every session's queue length (ui/queue.go); QueueFunc
	// one session's tickets, head first, for the detail view.
	QueuesFunc func() (map[monitor.Key]int, error)
	QueueFunc  func(key monitor.Key) ([]data.Ticket, error)
	// AsksFunc reads every ask to hand over pending now (ui/asks.go: the
	// table's ASK column), read with the queue lengths.
	AsksFunc func() (map[monitor.Key]data.PendingAsk, error)
	// InboxesFunc reads every conversation's live messages (ui/inbox.go:
	// the table's INBOX column), read with the queue lengths.
	InboxesFunc func() (map[monitor.Key]data.Inbox, error)
	// LimitsFunc reads every limit and its use (ui/limits.go: the accounts
	// view and the table's SLOT column), read with the queue lengths.
	LimitsFunc func() ([]AccountLimit, error)
	// TimelineFunc reads the timeline's lanes: a page of the sessions of
	// the window's history (q.Sessions, as data.Store.Sessions), and their
	// history from q.Since to q.Until: their events, oldest first, and who
	// held each at q.Since.
	TimelineFunc func(q LanesQuery) (History, error)
	// OwnersAtFunc reads who held each of keys at the instant at, from the
	// history, for the timeline's cursor.
	OwnersAtFunc func(keys []monitor.Key, at time.Time) (Owners, error)
	// ReleaseFunc force-releases key's lease if run still holds it.
	ReleaseFunc func(key monitor.Key, run uuid.UUID, reason string) (ReleaseResult, error)
	// ClearQueueFunc clears every live ticket of key's queue, recorded with
	// reason, and returns how many it cleared (ui/queue_clear.go).
	ClearQueueFunc func(key monitor.Key, reason string) (int, error)
}

// ReleaseResult is the outcome of a forced release.
type ReleaseResult struct {
	Released bool
	// Now is the lease as it is after a release that released nothing, if
	// somebody holds it (Held).
	Now  data.Lease
	Held bool
}

// Action is an extra key the embedding program adds (the demo's keys, for
// example). Its RunFunc runs inside a tea.Cmd; the text it returns, or its
// error, is shown in the status line.
type Action struct {
	Binding key.Binding
	// Destructive actions are disabled in read-only mode.
	Destructive bool
	// RunFunc gets the selected lease (ok false when no row is selected).
	RunFunc func(selected data.Lease, ok bool) (string, error)
}

// Config configures a Model. Zero fields take the documented defaults.
type Config struct {
	Source Source
	// Keys are the bindings. Default keymap.Default().
	Keys *keymap.Map
	// ReadOnly disables every key that changes the database.
	ReadOnly bool
	// Contexts are the databases of a monitor that watches several (their
	// names, modes and colours; Run opens them): the table gets a CONTEXT
	// column and the header a line of their links. Empty: one database.
	Contexts []Context
	// Title heads the screen. Default "leasetop".
	Title string
	// Database names the database in the header (host:port/db, never a
	// password).
	Database string
	// Actions are extra keys (see Action).
	Actions []Action
	// Devices, if its ListFunc is set, adds the devices pane (shown at
	// start; keymap.Map.Devices toggles it).
	Devices monitor.DeviceSource
	// Badge, if set, is called on every render for extra header text; it
	// must be cheap and safe to call from the UI goroutine.
	Badge func() string
	// Timeline opens the monitor on the timeline view.
	Timeline bool
	// Theme is the colours. Default: theme.Dark or theme.Light, by the
	// terminal's background.
	Theme *theme.Theme
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Location is where event times are shown. Default time.Local.
	Location *time.Location
	// State configures the monitor's state.
	State monitor.Config
	// Tick is the countdown refresh interval. Default 250 ms (4 Hz, the
	// least the countdowns may tick): each tick changes the screen, and each
	// change costs Bubble Tea's renderer a redraw of the whole screen
	// (about 2 ms at 200x50), most of what an idle monitor spends.
	Tick time.Duration
}

// Model is the monitor's Bubble Tea model.
type Model struct {
	cfg     Config
	keys    keymap.Map
	actions []Action
	styles  styles

	width, height int
	now           time.Time

	queues  queuePoll // the sessions' queue lengths (ui/queue.go)
	asks    askPoll   // the asks to hand over pending (ui/asks.go)
	inboxes inboxPoll // the conversations' inboxes (ui/inbox.go)
	limits  limitPoll // the accounts' limits (ui/limits.go)

	state    *monitor.State
	frozen   *monitor.State // the paused picture, nil when live
	frozenAt time.Time

	// The sessions table.
	sortBy    sortMode
	filter    string
	filtering bool
	filterIn  textinput.Model
	rows      []monitor.RowRef // filtered and sorted leases of the shown state (ui/rowrefs.go)
	rowsVer   uint64           // the shown state's LeasesVersion the rows were built at
	rowsOf    *monitor.State   // the state they were built from (live or frozen)
	rowsBy    rowsQuery        // what they list (refilterRows)
	// unfiltered is the rows as listed before the filter was typed, while
	// they are still the shown state's: erasing or changing the filter
	// filters them again, in one pass (refilterRows).
	unfiltered []monitor.RowRef
	// spareRows is a buffer of rows neither rows nor unfiltered uses, kept
	// for the next filter's first key: at a million leases a new one (12 MB,
	// grown by doubling) could start a collection mid-answer.
	spareRows []monitor.RowRef
	rowsDirty bool               // the leases changed; rebuild on the next tick
	builtAt   time.Time          // when the rows were last rebuilt
	counts    monitor.Counts     // the header's counts, refreshed with the rows and on each tick
	countIdx  monitor.CountIndex // the leases' expiries as of the rows' rebuild
	order     []monitor.RowRef   // the rows as shown when navigation started holding their order
	resynced  int                // leases of a resync just applied: waitNext frees the read (monitor.FreeAfterResync)
	holdUntil time.Time          // the order is held until then (after navigation)
	sel       monitor.Key
	hasSel    bool
	cur, off  int

	// The events pane.
	focus       focusArea
	evSel       int64
	evCur, evOf int
	evFiltered  filteredEvents // the events the filter keeps

	dev devicePane // the devices pane, when Config.Devices gives one

	tl timelineView // the timeline view (modeTimeline)

	acct accountsView // the accounts view (modeAccounts)

	mode     mode
	helpOff  int  // the first line of the help's body shown, when it scrolls
	helpFrom mode // the screen the help was opened from
	detail   *detailView
	dialog   *dialog
	inflight *releaseReq // a confirmed release waiting for its outcome

	status     string
	statusKind statusKind
	statusAt   time.Time
	resyncing  bool

	pending []monitor.Batch // batches held for the next tick (holdBatch)
	cache   viewCache       // what the last frames rendered
}

type mode int

const (
	modeMain mode = iota
	modeHelp
	modeDetail
	modeConfirm
	modeDevice // a device's detail view
	modeTimeline
	modeAccounts // the accounts' limits (ui/view_accounts.go)
)

type focusArea int

const (
	focusTable focusArea = iota
	focusEvents
	focusDevices
)

// New returns a model. It shows nothing until its first batch arrives. It
// refuses an Action whose key is already bound to one of the monitor's own
// actions.
func New(cfg Config) (*Model, error) {
	if cfg.Title == "" {
		cfg.Title = "leasetop"
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Location == nil {
		cfg.Location = time.Local
	}
	if cfg.Tick <= 0 {
		cfg.Tick = 250 * time.Millisecond
	}
	if cfg.Devices.Every <= 0 {
		cfg.Devices.Every = 500 * time.Millisecond
	}
	if cfg.Devices.Silent <= 0 {
		cfg.Devices.Silent = 3 * time.Second
	}
	keys := keymap.Default()
	if cfg.Keys != nil {
		keys = *cfg.Keys
	}
	if cfg.Devices.ListFunc == nil {
		keys.Devices.Unbind() // no pane: its key is free for an Action
	}
	if err := checkActionKeys(&keys, cfg.Actions); err != nil {
		return nil, err
	}
	actions := append([]Action(nil), cfg.Actions...)
	if cfg.ReadOnly {
		keys.SetReadOnly()
		for i := range actions {
			if actions[i].Destructive {
				actions[i].Binding.SetEnabled(false)
			}
		}
	}
	fi := textinput.New()
	fi.Prompt = "/"
	fi.Placeholder = "account, session, holder or run"
	fi.CharLimit = 256
	m := &Model{
		cfg:      cfg,
		keys:     keys,
		actions:  actions,
		styles:   newStyles(cfg.theme(true)),
		width:    80,
		height:   24,
		now:      cfg.Now(),
		state:    monitor.NewState(cfg.State),
		filterIn: fi,
		dev:      devicePane{on: cfg.Devices.ListFunc != nil},
	}
	m.filterIn.SetStyles(textinput.DefaultStyles(true))
	if cfg.Timeline {
		m.mode, m.tl.zoom = modeTimeline, defaultZoom
	}
	return m, nil
}

// theme is the configured theme, else the automatic one for a dark
// background or not.
func (c Config) theme(isDark bool) theme.Theme {
	if c.Theme != nil {
		return *c.Theme
	}
	return theme.Auto(isDark)
}

// checkActionKeys refuses an action whose key the map already binds.
func checkActionKeys(keys *keymap.Map, actions []Action) error {
	for _, a := range actions {
		for _, k := range a.Binding.Keys() {
			if name, ok := keys.Bound(k); ok {
				return fmt.Errorf("ui: the key %q of action %q is already bound to %s", k, a.Binding.Help().Desc, name)
			}
		}
	}
	return nil
}

// State returns the live state (for tests and the embedding program).
func (m *Model) State() *monitor.State { return m.state }

// Init starts the feed's first wait, the countdown tick, a background
// colour query and the devices pane's first read.
func (m *Model) Init() tea.Cmd {
	return tea.Batch(m.waitNext(), m.tick(), tea.RequestBackgroundColor, m.readDevices(0))
}
