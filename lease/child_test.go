package lease_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/internal/testkit/proctest"
	"github.com/leasetop/leasetop/internal/testkit/syncbuf"
	"github.com/leasetop/leasetop/lease"
)

// The child is this test binary started again as a holder that the test can
// freeze with SIGSTOP inside its fenced transaction: a real process, with its
// own connection and heartbeat, as in production.
const (
	envChild    = "LEASE_TEST_CHILD"     // the child's mode: childFenced or childBounded
	envChildDSN = "LEASE_TEST_CHILD_DSN" // its database
	envChildTTL = "LEASE_TEST_CHILD_TTL" // its lease's TTL (a Go duration)
)

// The child's modes.
const (
	// childFenced holds its lease inside a transaction that called
	// CheckFence (the row locked FOR SHARE), with no bound, until killed.
	childFenced = "fenced"
	// childBounded does the same inside Lease.FencedTx; after a line on
	// stdin it tries its write, prints how FencedTx ended and exits.
	childBounded = "bounded"
	// childDoWrite is childBounded inside Client.Do, with Do's context (the
	// lease's: cancelled when the lease is lost) given to FencedTx, as the
	// README's example does.
	childDoWrite = "do-write"
	// childDoCommit is childDoWrite with the write made before the ready
	// line: after the line on stdin fn returns at once, and FencedTx goes
	// straight on to the commit.
	childDoCommit = "do-commit"
)

// childMain is the child's main; it returns the exit code. It prints
// "ready BACKEND_PID FENCE" once inside the transaction.
func childMain(mode string) int {
	if err := runChild(context.Background(), mode); err != nil {
		fmt.Println("child:", err)
		return 1
	}
	return 0
}

func runChild(ctx context.Context, mode string) error {
	ttl, err := time.ParseDuration(os.Getenv(envChildTTL))
	if err != nil {
		return err
	}
	store, err := data.Open(ctx, os.Getenv(envChildDSN))
	if err != nil {
		return err
	}
	defer store.Close()
	if mode == childFrozenBatch {
		return frozenBatchChild(ctx, store, ttl)
	}
	if mode == childQueue {
		return queueChild(ctx, store, ttl)
	}
	if mode == childAsked {
		return askedChild(ctx, store, ttl)
	}
	if mode == childInbox {
		return inboxChild(ctx, store, ttl)
	}
	client, err := lease.New(store, lease.Config{TTL: ttl})
	if err != nil {
		return err
	}
	defer client.Close()
	p, err := client.Authorize(ctx, allowAll, testKey, "child")
	if err != nil {
		return err
	}
	if mode == childDoWrite || mode == childDoCommit {
		return doChild(ctx, mode, store, client, p)
	}
	l, err := client.Try(ctx, p)
	if err != nil {
		return err
	}
	switch mode {
	case childFenced:
		tx, err := store.Pool().Begin(ctx)
		if err != nil {
			return err
		}
		if err := l.CheckFence(ctx, tx); err != nil {
			return err
		}
		if err := ready(ctx, tx, l.Fence()); err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, os.Stdin) // until killed
		return nil
	case childBounded:
		err := l.FencedTx(ctx, store.Pool(), func(ctx context.Context, tx pgx.Tx) error {
			if err := ready(ctx, tx, l.Fence()); err != nil {
				return err
			}
			if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO doc VALUES ('child', $1)`, l.Fence())
			return err
		})
		fmt.Printf("done stale=%v lost=%v err=%v\n", errors.Is(err, lease.ErrStale), errors.Is(err, lease.ErrLost), err)
		return nil
	}
	return fmt.Errorf("unknown mode %q", mode)
}

// ready prints the child's ready line from inside its transaction tx.
func ready(ctx context.Context, tx pgx.Tx, fence int64) error {
	var pid int
	if err := tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		return err
	}
	fmt.Printf("ready %d %d\n", pid, fence)
	return nil
}

// doChild runs the childDoWrite and childDoCommit modes: FencedTx inside
// Client.Do, given Do's context. It prints how FencedTx ended, then what Do
// returned.
func doChild(ctx context.Context, mode string, store *data.Store, client *lease.Client, p lease.Permit) error {
	err := client.Do(ctx, p, lease.BusyRefuse, func(ctx context.Context, l *lease.Lease) error {
		write := func(ctx context.Context, tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `INSERT INTO doc VALUES ('child', $1)`, l.Fence())
			return err
		}
		err := l.FencedTx(ctx, store.Pool(), func(ctx context.Context, tx pgx.Tx) error {
			if mode == childDoCommit {
				if err := write(ctx, tx); err != nil {
					return err
				}
			}
			if err := ready(ctx, tx, l.Fence()); err != nil {
				return err
			}
			if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
				return err
			}
			if mode == childDoCommit {
				return nil // straight on to the commit
			}
			return write(ctx, tx)
		})
		fmt.Printf("done stale=%v lost=%v err=%v\n", errors.Is(err, lease.ErrStale), errors.Is(err, lease.ErrLost), err)
		return err
	})
	fmt.Printf("do: %v\n", err)
	return nil
}

// child is a running child process.
type child struct {
	*proctest.Process
	stdin   io.WriteCloser
	out     syncbuf.Buffer // its stdout and stderr
	backend int            // the server process of its fenced transaction
	fence   int64          // its lease's fence
}

// startChild starts a child in mode holding testKey's lease on the
// database at dsn (db.URL, or db through a pooler) with ttl and waits until
// it is inside its fenced transaction. It is killed when the test ends.
func startChild(t *testing.T, dsn, mode string, ttl time.Duration) *child {
	t.Helper()
	c := &child{}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), envChild+"="+mode, envChildDSN+"="+dsn, envChildTTL+"="+ttl.String())
	cmd.Stdout, cmd.Stderr = &c.out, &c.out
	var err error
	if c.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	c.Process = proctest.Start(t, cmd)
	pgtest.Eventually(t, 30*time.Second, "the child to be inside its fenced transaction", func() bool {
		line, _, _ := strings.Cut(c.out.String(), "\n")
		if strings.HasPrefix(line, "child:") {
			t.Fatalf("child failed: %s", c.out.String())
		}
		_, err := fmt.Sscanf(line, "ready %d %d", &c.backend, &c.fence)
		return err == nil
	})
	return c
}
