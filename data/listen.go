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
	// Buffer is how many decoded events wait for the consumer before the
	// listener stops queueing them and asks for a resync instead. Default 4096.
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
}

// ListenerStatus is a listener's connection status.
type ListenerStatus int

// Listener statuses.
const (
	ListenerConnecting   ListenerStatus = iota // first connection attempt
	ListenerLive                               // listening; every transition from now on is delivered
	ListenerReconnecting                       // connection lost or refused; retrying
	ListenerStopped                            // Run returned
)

func (s ListenerStatus) String() string {
	switch s {
	case ListenerConnecting:
		return "CONNECTING"
	case ListenerLive:
		return "LIVE"
	case ListenerReconnecting:
		return "RECONNECTING"
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
}

// Listener delivers lease_events notifications on a dedicated connection
// (never a pool connection) through pgxlisten. After every (re)connection, once
// it is listening, it signals Resync: the consumer then reads a snapshot and the
// events it missed, so no transition is lost across an outage. Notifications
// may repeat what that read returned; consumers de-duplicate by event id.
//
// The listener never blocks on its consumer: when Events is full it drops the
// event, counts it and signals Resync. Malformed payloads are counted and
// dropped, never fatal. Any role that may connect can NOTIFY, so a payload is
// only a claim: a "truncated" one is delivered like any other event, and the
// consumer reads it back before it acts on it (monitor.Feed resyncs only for
// a truncated row that lease.event really holds).
type Listener struct {
	store   *Store
	connCfg *pgx.ConnConfig
	cfg     ListenerConfig

	events  chan Event
	resync  chan struct{}
	changed chan struct{}
	pong    chan struct{}
	pingCh  string

	mu       sync.Mutex
	state    ListenerState
	lastRecv time.Time

	malformed atomic.Int64
	dropped   atomic.Int64
}

// NewListener returns a listener on the store's database. Start it with Run.
func (s *Store) NewListener(cfg ListenerConfig) *Listener {
	cfg.Buffer = cmp.Or(cfg.Buffer, 4096)
	cfg.ReconnectDelay = cmp.Or(cfg.ReconnectDelay, 250*time.Millisecond)
	cfg.PingInterval = cmp.Or(cfg.PingInterval, 5*time.Second)
	cfg.PingTimeout = cmp.Or(cfg.PingTimeout, 3*time.Second)
	connCfg := s.pool.Config().ConnConfig.Copy()
	connCfg.RuntimeParams["application_name"] = "leasetop listener"
	return &Listener{
		store:   s,
		connCfg: connCfg,
		cfg:     cfg,
		events:  make(chan Event, cfg.Buffer),
		resync:  make(chan struct{}, 1),
		changed: make(chan struct{}, 1),
		pong:    make(chan struct{}, 1),
		pingCh:  "lease_ping_" + randomSuffix(),
		state:   ListenerState{Status: ListenerConnecting, Since: time.Now()},
	}
}

// Events delivers decoded events in commit order.
func (l *Listener) Events() <-chan Event { return l.events }

// Resync receives a value when the consumer must re-read the snapshot and the
// events since the last one it saw: after each (re)connection, after events
// were dropped, and after a TRUNCATE.
func (l *Listener) Resync() <-chan struct{} { return l.resync }

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

// Dropped returns how many events were dropped because the consumer was
// behind (each followed by a Resync).
func (l *Listener) Dropped() int64 { return l.dropped.Load() }

// Run listens until ctx is cancelled, reconnecting as needed. It returns nil
// when ctx is cancelled.
func (l *Listener) Run(ctx context.Context) error {
	defer l.setStatus(ListenerStopped, nil)
	for ctx.Err() == nil {
		connCtx, cancel := context.WithCancelCause(ctx)
		var wg sync.WaitGroup
		wg.Go(func() { l.watch(connCtx, cancel) })
		pl := &pgxlisten.Listener{
			Connect:        l.connect,
			LogError:       l.logError,
			ReconnectDelay: l.cfg.ReconnectDelay,
		}
		pl.Handle(Channel, eventHandler{l})
		pl.Handle(l.pingCh, pongHandler{l})
		_ = pl.Listen(connCtx)
		cancel(nil)
		wg.Wait()
		if cause := context.Cause(connCtx); ctx.Err() == nil && cause != nil {
			l.failed(cause)
		}
	}
	return nil
}

func (l *Listener) connect(ctx context.Context) (*pgx.Conn, error) {
	return Connect(ctx, l.connCfg)
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
	l.mu.Unlock()
	l.setStatus(ListenerReconnecting, err)
}

func (l *Listener) setStatus(st ListenerStatus, err error) {
	l.mu.Lock()
	if l.state.Status != st {
		l.state.Since = time.Now()
	}
	l.state.Status, l.state.Err = st, err
	if st == ListenerLive {
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

// watch proves a live connection still delivers: after PingInterval of
// silence it sends a notification to the listener's private channel through
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

func (l *Listener) ping(ctx context.Context) error {
	select { // forget a late pong from an earlier ping
	case <-l.pong:
	default:
	}
	pctx, cancel := context.WithTimeout(ctx, l.cfg.PingTimeout)
	defer cancel()
	if _, err := l.store.pool.Exec(pctx, `SELECT pg_notify($1, '')`, l.pingCh); err != nil {
		return fmt.Errorf("ping: %w", translate(err))
	}
	select {
	case <-l.pong:
		return nil
	case <-pctx.Done():
		return fmt.Errorf("listener connection delivered no ping within %s", l.cfg.PingTimeout)
	}
}

// eventHandler handles lease_events; HandleBacklog runs after every LISTEN.
type eventHandler struct{ l *Listener }

func (h eventHandler) HandleNotification(_ context.Context, n *pgconn.Notification, _ *pgx.Conn) error {
	l := h.l
	l.touch()
	ev, err := DecodeEvent(n.Payload)
	if err != nil {
		l.malformed.Add(1)
		return nil // counted and dropped; an error here would read as a connection failure
	}
	select {
	case l.events <- ev:
	default:
		l.dropped.Add(1)
		signal(l.resync)
	}
	return nil
}

func (h eventHandler) HandleBacklog(context.Context, string, *pgx.Conn) error {
	h.l.touch()
	h.l.setStatus(ListenerLive, nil)
	signal(h.l.resync)
	return nil
}

type pongHandler struct{ l *Listener }

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
