package data

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgxlisten"
)

// ListenerConfig configures a Listener. Zero fields take the documented
// defaults.
type ListenerConfig struct {
	// Buffer is how many events may wait for the consumer (see Deliveries):
	// past it notifications are dropped and replaced by one resync, and rows
	// read from lease.event wait in the table. Default 4096.
	Buffer int
	// ReconnectDelay is the pause between connection attempts. Default 250 ms.
	ReconnectDelay time.Duration
	// PingInterval: after this much silence the listener sends itself a
	// notification through the pool to prove its connection still delivers.
	// Default 5 s.
	PingInterval time.Duration
	// PingTimeout is how long that notification may take before the listener
	// drops its connection and reconnects. Default 3 s.
	PingTimeout time.Duration

	// DSN is the connection string to LISTEN on when it must not be the
	// store's: through a transaction pooler, a direct (or session-mode)
	// connection to the primary. Default: the store's Options.ListenDSN,
	// else the store's own connection.
	DSN string
	// Poll, when > 0, is poll mode on request: the listener never LISTENs
	// and reads lease.event by id every Poll instead. Default: the store's
	// Options.Poll.
	Poll time.Duration
	// FallbackPoll is the poll interval when the listener switches to poll
	// mode by itself, because listening cannot work: on a hot standby,
	// through a pooler without a listen DSN (found before any LISTEN is
	// sent), when LISTEN fails, or when a new connection does not hear its
	// own ping (LISTEN through a transaction pooler "succeeds" and hears
	// nothing).
	// Default 250 ms.
	FallbackPoll time.Duration
	// PollWindow is how many ids below the newest one poll mode (and the
	// catch-up) looks for missing ids when it starts: an event id is drawn
	// before its transaction commits, so a smaller id can commit after a
	// larger one. Ids found missing later are asked for until no
	// transaction that could commit them is in progress, however far
	// behind they fall. Default 1000 (the monitor's resync window).
	PollWindow int64
	// PollLimit caps the rows one poll reads; a full page is followed by
	// the next one at once. Default 1000.
	PollLimit int
	// CatchUp is how often a listening listener reads lease.event by id for
	// transitions whose notification never came: the Go library notifies
	// right after its commit, and a process that dies in between leaves a
	// committed transition unnotified (catchup.go). Such a row is delivered
	// in a FromCatchUp batch. Default 300 ms (DefaultCatchUp); negative:
	// never.
	CatchUp time.Duration
}

// ListenerStatus is a listener's connection status.
type ListenerStatus int

// Listener statuses.
const (
	ListenerConnecting   ListenerStatus = iota // first connection attempt
	ListenerLive                               // listening; every transition from now on is delivered
	ListenerReconnecting                       // connection lost or refused (or, polling, a poll failed); retrying
	ListenerStopped                            // Run returned
	ListenerPolling                            // poll mode: reading lease.event every Poll; every transition is delivered
)

func (s ListenerStatus) String() string {
	switch s {
	case ListenerConnecting:
		return "CONNECTING"
	case ListenerLive:
		return "LIVE"
	case ListenerReconnecting:
		return "RECONNECTING"
	case ListenerPolling:
		return "POLL"
	default:
		return "STOPPED"
	}
}

// ListenerState is a listener's connection state.
type ListenerState struct {
	Status  ListenerStatus
	Attempt int       // failed attempts since the connection was last live
	Err     error     // the last error, nil when live
	Since   time.Time // when Status last changed
	// Poll is the poll interval once the listener is in poll mode (it stays
	// in it until Run returns), 0 while it listens.
	Poll time.Duration
	// Reason says why the listener polls; its Cause is PollNone while it
	// listens.
	Reason PollReason
}

// Listener delivers lease transitions to one consumer, on one channel
// (Deliveries) with one rule: it never waits for its consumer, and at most
// ListenerConfig.Buffer events wait for it. What it delivers, in order:
//
//   - a resync marker after every (re)connection, once it is listening (or
//     polling): the consumer then reads a snapshot and the events it missed,
//     so no transition is lost across an outage;
//   - notifications from lease_events, heard on a dedicated connection
//     (never a pool connection) through pgxlisten (FromNotify). When the
//     consumer has no room for one, it is dropped, counted (Dropped) and a
//     resync marker takes its place: the consumer gets one resync instead of
//     the notifications it could not take;
//   - rows of lease.event whose notification never came (FromCatchUp), and
//     in poll mode rows of lease.event instead of notifications (FromPoll).
//     Rows are never dropped: their reader waits until there is room.
//
// Notifications may repeat what a resync read returned, and the catch-up
// what a notification said; consumers de-duplicate by event id. Malformed
// payloads are counted and dropped, never fatal. Any role that may connect
// can NOTIFY, so a notification is only a claim: a "truncated" one is
// delivered like any other event, and the consumer reads it back
// (ReadBack) before it acts on it (monitor.Feed resyncs only for a
// truncated row that lease.event really holds). A notification naming an
// event behind the listener's reading position (committed before the
// connection listened, or delivered already) is not delivered at all
// (Repeated): an old id sent again is no news to any consumer.
//
// A new connection counts as live only once it has heard its own ping. When
// listening cannot work (a hot standby, the store's own connection through
// a pooler, found before any LISTEN, a LISTEN error, a connection that
// never hears its ping) the listener switches to poll mode for good and says
// why in State; then it delivers rows of lease.event, read by id, every
// transition exactly once.
type Listener struct {
	store   *Store
	connCfg *pgx.ConnConfig
	cfgErr  error // the listen DSN did not parse
	cfg     ListenerConfig

	out     chan Delivery
	box     *outbox // what waits for the consumer (delivery.go)
	changed chan struct{}
	pong    chan struct{}
	probe   chan struct{} // a new connection LISTENs on both channels: prove it hears
	pingCh  string

	mu       sync.Mutex
	state    ListenerState
	lastRecv time.Time
	backlogs int // channels LISTENed on the current connection
	conns    int // connections made: a probe is about the one it started on
	fails    int // failed attempts and lost connections, ever

	catch catchUp // the catch-up's cursor and what was heard (catchup.go)

	malformed atomic.Int64
	dropped   atomic.Int64
	repeated  atomic.Int64
}

// NewListener returns a listener on the store's database. Start it with Run.
func (s *Store) NewListener(cfg ListenerConfig) *Listener {
	cfg.Buffer = cmp.Or(cfg.Buffer, 4096)
	cfg.ReconnectDelay = cmp.Or(cfg.ReconnectDelay, 250*time.Millisecond)
	cfg.PingInterval = cmp.Or(cfg.PingInterval, 5*time.Second)
	cfg.PingTimeout = cmp.Or(cfg.PingTimeout, 3*time.Second)
	cfg.DSN = cmp.Or(cfg.DSN, s.opt.ListenDSN)
	cfg.Poll = cmp.Or(cfg.Poll, s.opt.Poll)
	cfg.FallbackPoll = cmp.Or(cfg.FallbackPoll, DefaultFallbackPoll)
	cfg.PollWindow = cmp.Or(cfg.PollWindow, 1000)
	cfg.PollLimit = cmp.Or(cfg.PollLimit, 1000)
	cfg.CatchUp = cmp.Or(cfg.CatchUp, DefaultCatchUp)
	l := &Listener{
		store:   s,
		cfg:     cfg,
		out:     make(chan Delivery),
		box:     newOutbox(cfg.Buffer),
		changed: make(chan struct{}, 1),
		pong:    make(chan struct{}, 1),
		probe:   make(chan struct{}, 1),
		pingCh:  "lease_ping_" + randomSuffix(),
		state:   ListenerState{Status: ListenerConnecting, Since: time.Now()},
	}
	if cfg.DSN != "" {
		l.connCfg, l.cfgErr = ParseConnConfig(cfg.DSN)
	} else {
		l.connCfg = s.pool.Config().ConnConfig.Copy()
	}
	if l.connCfg != nil {
		l.connCfg.RuntimeParams["application_name"] = "leasetop listener"
	}
	return l
}

// Batches delivers, in order, resync markers and batches of events (see
// Listener). Notifications come in the order they were sent: the trigger's
// in commit order, the Go library's right after each commit (so two of them
// on different connections may cross). A consumer that reads notifications
// back reports the ids it found no row for with Missing, or a transition
// notified before it committed may never reach it. While the consumer is
// busy, what arrives from one source gathers into one batch. The channel is
// not closed when Run returns.
func (l *Listener) Deliveries() <-chan Delivery { return l.out }

// StateChanged receives a value when State changes.
func (l *Listener) StateChanged() <-chan struct{} { return l.changed }

// State returns the current connection state.
func (l *Listener) State() ListenerState {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.state
}

// Malformed returns how many payloads were dropped as malformed.
func (l *Listener) Malformed() int64 { return l.malformed.Load() }

// Dropped returns how many notifications were dropped because the consumer
// was behind (each run of drops followed by a resync marker).
func (l *Listener) Dropped() int64 { return l.dropped.Load() }

// Repeated returns how many notifications were dropped because they named
// an event behind the listener's reading position: one committed before
// its connection started listening (which the consumer's resync reflects),
// or one it has delivered already (see catchup.go). Anyone who may connect
// can send an old event id again; such a notification is never delivered.
func (l *Listener) Repeated() int64 { return l.repeated.Load() }

// Run listens until ctx is cancelled, reconnecting as needed, or polls when
// listening cannot work. It returns nil when ctx is cancelled, and a
// *DSNError at once when ListenerConfig.DSN does not parse.
func (l *Listener) Run(ctx context.Context) error {
	if l.cfgErr != nil {
		l.setStatus(ListenerStopped, l.cfgErr)
		return l.cfgErr
	}
	defer l.setStatus(ListenerStopped, nil)
	var wg sync.WaitGroup
	defer wg.Wait()
	pctx, stop := context.WithCancel(ctx)
	defer stop()
	wg.Go(func() { l.box.pump(pctx, l.out) })
	why := l.pollFromStart()
	for why.Cause == PollNone && ctx.Err() == nil {
		why = l.listen(ctx)
	}
	if why.Cause != PollNone && ctx.Err() == nil {
		if why.Cause != PollRequested {
			l.store.polls.set(l.cfg.DSN, why)
		}
		l.poll(ctx, why)
	}
	return nil
}

// listen runs pgxlisten on one connection after another until ctx ends, the
// watchdog drops the connection, or listening turns out not to work: then
// it returns why.
func (l *Listener) listen(ctx context.Context) PollReason {
	connCtx, cancel := context.WithCancelCause(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { l.watch(connCtx, cancel) })
	wg.Go(func() { l.runCatchUp(connCtx) })
	pl := &pgxlisten.Listener{
		Connect: l.connect,
		LogError: func(ctx context.Context, err error) {
			var sw *pollSwitch
			if errors.As(err, &sw) {
				cancel(sw)
				return
			}
			if pgErr, ok := statementError(err); ok { // LISTEN itself failed
				cancel(&pollSwitch{PollReason{Cause: PollListenFailed, Detail: pgErr.Message}})
				return
			}
			l.logError(ctx, err)
		},
		ReconnectDelay: l.cfg.ReconnectDelay,
	}
	pl.Handle(Channel, eventHandler{l})
	pl.Handle(l.pingCh, pongHandler{l})
	_ = pl.Listen(connCtx)
	cancel(nil)
	wg.Wait()
	cause := context.Cause(connCtx)
	var sw *pollSwitch
	switch {
	case errors.As(cause, &sw):
		return sw.why
	case ctx.Err() == nil && cause != nil:
		l.failed(cause)
	}
	return PollReason{}
}

// connect opens the listener's own connection, first asking the store
// whether its server is a hot standby: there LISTEN cannot run, and rows
// read there reach it only when replayed, so the listener polls. So it does
// when the connection is the store's own (no listen DSN) and goes through a
// pooler (see samePooler).
func (l *Listener) connect(ctx context.Context) (*pgx.Conn, error) {
	standby, err := l.store.Standby(ctx)
	if err != nil {
		return nil, err
	}
	if standby {
		return nil, &pollSwitch{PollReason{Cause: PollStandby}}
	}
	l.mu.Lock()
	l.backlogs = 0
	l.conns++
	l.mu.Unlock()
	select { // a probe asked for by an earlier connection is not this one's
	case <-l.probe:
	default:
	}
	conn, err := pgx.ConnectConfig(ctx, l.connCfg)
	if err != nil {
		return nil, translate(err)
	}
	if l.cfg.DSN == "" {
		if err := samePooler(ctx, conn); err != nil {
			conn.Close(ctx)
			return nil, err
		}
	}
	return conn, nil
}

// samePooler returns a *pollSwitch when conn, the store's own connection
// string, reaches PostgreSQL through a pooler (its backend pid is not the
// one announced at start-up), before any LISTEN is sent. Through a
// transaction pooler LISTEN runs on whichever server connection the pooler
// lends for that one statement and stays there when it goes back to the
// pool: the listener hears nothing, and that server connection goes on
// receiving notifications that no client reads (PgBouncer: "got packet 'A'
// from server when not linked"), lent to one client after another, after
// the listener has gone. A listen DSN (ListenerConfig.DSN) is taken as
// direct or session-mode, as documented, and is not checked: a session
// pooler keeps one server connection per client and resets it when the
// client leaves.
func samePooler(ctx context.Context, conn *pgx.Conn) error {
	behind, err := pooled(ctx, conn)
	switch {
	case err != nil:
		return translate(err)
	case behind:
		return &pollSwitch{PollReason{Cause: PollPooler}}
	}
	return nil
}

func (l *Listener) logError(ctx context.Context, err error) {
	if ctx.Err() != nil || errors.Is(err, context.Canceled) {
		return
	}
	l.failed(err)
}

// failed records a failed attempt or a lost connection.
func (l *Listener) failed(err error) {
	l.mu.Lock()
	l.state.Attempt++
	l.fails++
	l.mu.Unlock()
	l.setStatus(ListenerReconnecting, err)
}

func (l *Listener) setStatus(st ListenerStatus, err error) {
	l.mu.Lock()
	if l.state.Status != st {
		l.state.Since = time.Now()
	}
	l.state.Status, l.state.Err = st, err
	if st == ListenerLive || st == ListenerPolling {
		l.state.Attempt = 0
	}
	l.mu.Unlock()
	signal(l.changed)
}

func (l *Listener) touch() {
	l.mu.Lock()
	l.lastRecv = time.Now()
	l.mu.Unlock()
}

// watch proves a connection delivers. A new one counts as live only once
// it has heard its own ping (see probe). A live one, after PingInterval of
// silence, sends a notification to the listener's private channel through
// the pool and cancels the connection when none arrives within PingTimeout.
// A half-open connection (a blackholed network) is found this way within
// PingInterval + PingTimeout, long before TCP keepalive would notice.
func (l *Listener) watch(ctx context.Context, cancel context.CancelCauseFunc) {
	tick := time.NewTicker(l.cfg.PingInterval / 4)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-l.probe:
			l.proveNew(ctx, cancel)
			continue
		case <-tick.C:
		}
		l.mu.Lock()
		live, silent := l.state.Status == ListenerLive, time.Since(l.lastRecv)
		l.mu.Unlock()
		if !live || silent < l.cfg.PingInterval {
			continue
		}
		if err := l.ping(ctx); err != nil && ctx.Err() == nil {
			cancel(err)
			return
		}
	}
}

// proveNew pings a connection that has just LISTENed on both channels. When
// the ping comes back the connection is live and the consumer resyncs. When
// it was sent (through the pool) and never came back, the connection hears
// nothing, as a LISTEN through a transaction pooler does: the listener
// polls instead of reconnecting to the same deaf end. A ping that could not
// be sent is a connection problem: reconnect. So is a connection lost
// while the ping was on its way.
func (l *Listener) proveNew(ctx context.Context, cancel context.CancelCauseFunc) {
	l.mu.Lock()
	conns, fails := l.conns, l.fails
	l.mu.Unlock()
	err := l.ping(ctx)
	l.mu.Lock()
	lost := l.conns != conns || l.fails != fails
	l.mu.Unlock()
	var deaf *notHeardError
	switch {
	case ctx.Err() != nil:
	case errors.As(err, &deaf) && lost: // pgxlisten reconnects; the next connection is probed
	case errors.As(err, &deaf):
		cancel(&pollSwitch{PollReason{Cause: PollNoDelivery, Detail: deaf.timeout.String()}})
	case err != nil:
		cancel(err)
	default:
		l.touch()
		if err := l.startCatchUp(ctx); err != nil && !unreadable(err) {
			cancel(err) // no reading position: try again on a new connection
			return
		}
		l.setStatus(ListenerLive, nil)
		l.box.resync()
	}
}

// unreadable reports whether err says that the login may not read
// lease.event (no lease_reader) or that it is missing: the listener then
// listens without a reading position, and delivers every notification.
func unreadable(err error) bool {
	return errors.Is(err, ErrPermission) || errors.Is(err, ErrSchema)
}

func (l *Listener) ping(ctx context.Context) error {
	select { // forget a late pong from an earlier ping
	case <-l.pong:
	default:
	}
	pctx, cancel := context.WithTimeout(ctx, l.cfg.PingTimeout)
	defer cancel()
	if _, err := l.store.pool.Exec(pctx, `SELECT pg_catalog.pg_notify($1, '')`, l.pingCh); err != nil {
		return fmt.Errorf("ping: %w", translate(err))
	}
	select {
	case <-l.pong:
		return nil
	case <-pctx.Done():
		return &notHeardError{timeout: l.cfg.PingTimeout}
	}
}

// notHeardError: a ping was sent and its notification did not arrive.
type notHeardError struct{ timeout time.Duration }

func (e *notHeardError) Error() string {
	return fmt.Sprintf("listener connection delivered no ping within %s", e.timeout)
}

// backlog records that the current connection LISTENs on one more channel;
// once it listens on both, the watchdog proves it hears.
func (l *Listener) backlog() {
	l.mu.Lock()
	l.backlogs++
	all := l.backlogs == 2
	l.mu.Unlock()
	if all {
		signal(l.probe)
	}
}

// eventHandler handles lease_events; HandleBacklog runs after every LISTEN.
type eventHandler struct{ l *Listener }

func (h eventHandler) HandleNotification(_ context.Context, n *pgconn.Notification, _ *pgx.Conn) error {
	l := h.l
	l.touch()
	ev, err := decodeEvent(n.Payload)
	if err != nil {
		l.malformed.Add(1)
		return nil // counted and dropped; an error here would read as a connection failure
	}
	if !l.catch.hear(ev) { // before the consumer can report it Missing
		l.repeated.Add(1) // its row is behind the reading position: nothing new
		return nil
	}
	if !l.deliver(ev) {
		l.catch.unhear(ev.ID) // the consumer never gets to read it back
	}
	return nil
}

// deliver queues a notification for the consumer without blocking: when
// there is no room it drops ev, counts it, queues a resync and reports
// false.
func (l *Listener) deliver(ev Event) bool {
	if l.box.push(FromNotify, []Event{ev}, false) {
		return true
	}
	l.dropped.Add(1)
	l.box.resync()
	return false
}

// HandleBacklog runs once LISTEN lease_events has completed.
func (h eventHandler) HandleBacklog(context.Context, string, *pgx.Conn) error {
	h.l.backlog()
	return nil
}

type pongHandler struct{ l *Listener }

// HandleBacklog runs once LISTEN on the ping channel has completed.
func (h pongHandler) HandleBacklog(context.Context, string, *pgx.Conn) error {
	h.l.backlog()
	return nil
}

func (h pongHandler) HandleNotification(context.Context, *pgconn.Notification, *pgx.Conn) error {
	h.l.touch()
	signal(h.l.pong)
	return nil
}

// signal sends on a 1-buffered channel without blocking; pending signals
// coalesce.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
