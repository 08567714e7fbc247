package proctest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/lease"
)

// Environment of the recorder child.
const (
	// EnvRecorder set to "1" makes a test binary run RecorderMain instead of
	// its tests (see IsRecorder).
	EnvRecorder = "LEASETOP_RECORDER"
	// EnvRecorderDSN is the database the recorder writes to (directly, not
	// through any proxy the holder uses).
	EnvRecorderDSN = "LEASETOP_RECORDER_DSN"
	// EnvRecorderEvery is the pause between write attempts (a Go duration).
	EnvRecorderEvery = "LEASETOP_RECORDER_EVERY"
	// EnvRecorderIgnoreTerm set to "1" makes the recorder ignore SIGTERM:
	// it goes on attempting writes until it is killed (a command that does
	// not stop when asked).
	EnvRecorderIgnoreTerm = "LEASETOP_RECORDER_IGNORE_TERM"
)

// RecorderSchema creates the table the recorder writes.
const RecorderSchema = `CREATE TABLE rec (
	id     bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	pid    integer NOT NULL,
	ppid   integer NOT NULL,
	run_id uuid NOT NULL, -- the public run id, as the lease events show it
	fence  bigint NOT NULL,
	kind   text NOT NULL CHECK (kind IN ('start', 'write', 'refused', 'error', 'stop')),
	at     timestamptz NOT NULL DEFAULT clock_timestamp())`

// Record kinds.
const (
	KindStart   = "start"   // the child started
	KindWrite   = "write"   // a write attempt passed the fence check and committed
	KindRefused = "refused" // a write attempt failed the fence check: nothing was written
	KindError   = "error"   // a write attempt failed otherwise: nothing was written
	KindStop    = "stop"    // the child got SIGTERM and is exiting
)

// IsRecorder reports whether this process was started as the recorder.
func IsRecorder() bool { return os.Getenv(EnvRecorder) == "1" }

// RecorderMain is the recorder child: it reads its lease token from the
// environment `leasetop run` gives it, records "start", then attempts a
// fence-checked write every EnvRecorderEvery until SIGTERM, when it makes a
// last attempt (a graceful shutdown that tries to commit its last work),
// records "stop" and exits 0 (with EnvRecorderIgnoreTerm, until it is
// killed). It returns the process exit code.
func RecorderMain() int {
	if err := record(); err != nil {
		fmt.Fprintln(os.Stderr, "recorder:", err)
		return 1
	}
	return 0
}

func record() error {
	tok, err := lease.TokenFromEnv(os.Getenv)
	if err != nil {
		return err
	}
	every, err := time.ParseDuration(os.Getenv(EnvRecorderEvery))
	if err != nil {
		every = 20 * time.Millisecond
	}
	term := make(chan os.Signal, 1)
	if os.Getenv(EnvRecorderIgnoreTerm) == "1" {
		signal.Ignore(syscall.SIGTERM) // term never receives: writes until killed
	} else {
		signal.Notify(term, syscall.SIGTERM)
	}
	ctx := context.Background()
	r := &recorder{dsn: os.Getenv(EnvRecorderDSN), tok: tok}
	defer r.close(ctx)
	if err := r.note(ctx, KindStart); err != nil {
		return err
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-term:
			r.attempt(ctx)
			return r.note(ctx, KindStop)
		case <-tick.C:
			r.attempt(ctx)
		}
	}
}

type recorder struct {
	dsn  string
	tok  lease.Token
	conn *pgx.Conn
}

// connect (re)opens the connection. A writer paused inside its transaction
// would hold the lease row FOR SHARE and block every takeover, so the
// server ends such a session after a short idle time in a transaction.
func (r *recorder) connect(ctx context.Context) error {
	if r.conn != nil && !r.conn.IsClosed() {
		return nil
	}
	cfg, err := pgx.ParseConfig(r.dsn)
	if err != nil {
		return err
	}
	cfg.RuntimeParams["idle_in_transaction_session_timeout"] = "500"
	cfg.RuntimeParams["application_name"] = "recorder"
	r.conn, err = pgx.ConnectConfig(ctx, cfg)
	return err
}

func (r *recorder) close(ctx context.Context) {
	if r.conn != nil {
		r.conn.Close(ctx)
	}
}

// note inserts a record of kind without any fence check.
func (r *recorder) note(ctx context.Context, kind string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := r.connect(ctx); err != nil {
		return err
	}
	_, err := r.conn.Exec(ctx, `INSERT INTO rec (pid, ppid, run_id, fence, kind) VALUES ($1, $2, $3, $4, $5)`,
		os.Getpid(), os.Getppid(), r.tok.PublicRunID(), r.tok.Fence, kind)
	return err
}

// attempt makes one protected write: the fence check and the insert in one
// transaction. A refused or failed attempt is recorded as such.
func (r *recorder) attempt(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err := r.connect(ctx)
	if err == nil {
		err = pgx.BeginFunc(ctx, r.conn, func(tx pgx.Tx) error {
			if err := r.tok.Check(ctx, tx); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO rec (pid, ppid, run_id, fence, kind) VALUES ($1, $2, $3, $4, 'write')`,
				os.Getpid(), os.Getppid(), r.tok.PublicRunID(), r.tok.Fence)
			return err
		})
	}
	switch {
	case err == nil:
	case errors.Is(err, lease.ErrStale):
		_ = r.note(ctx, KindRefused)
	default:
		_ = r.note(ctx, KindError)
	}
}

// Record is one row the recorder wrote.
type Record struct {
	PID, PPID int
	RunID     uuid.UUID // public
	Fence     int64
	Kind      string
	At        time.Time
}

// Records reads every record in write order.
func Records(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}) ([]Record, error) {
	rows, err := q.Query(ctx, `SELECT pid, ppid, run_id, fence, kind, at FROM rec ORDER BY at, id`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (Record, error) {
		var r Record
		err := row.Scan(&r.PID, &r.PPID, &r.RunID, &r.Fence, &r.Kind, &r.At)
		return r, err
	})
}

// Child is what the records say about one recorder child.
type Child struct {
	RunID      uuid.UUID
	Fence      int64
	PID, PPID  int
	Start, End time.Time // first and last record, on the database clock
	Stopped    bool      // it recorded "stop" (it was not killed)
	Records    []Record
}

// Children groups records by run, in order of their first record.
func Children(recs []Record) []*Child {
	var out []*Child
	byRun := map[uuid.UUID]*Child{}
	for _, r := range recs {
		c := byRun[r.RunID]
		if c == nil {
			c = &Child{RunID: r.RunID, Fence: r.Fence, PID: r.PID, PPID: r.PPID, Start: r.At}
			byRun[r.RunID] = c
			out = append(out, c)
		}
		c.End = r.At
		c.Stopped = c.Stopped || r.Kind == KindStop
		c.Records = append(c.Records, r)
	}
	return out
}

// String describes c for test failure messages.
func (c *Child) String() string {
	return "child pid " + strconv.Itoa(c.PID) + " fence " + strconv.FormatInt(c.Fence, 10) +
		" [" + c.Start.Format("15:04:05.000000") + ", " + c.End.Format("15:04:05.000000") + "]"
}
