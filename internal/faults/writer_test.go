package faults_test

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/demo/device"
	"github.com/leasetop/leasetop/lease"
)

// Environment of the writer child.
const (
	envWriter       = "LEASETOP_FAULTS_WRITER"        // "1": this test binary runs writerMain
	envWriterDSN    = "LEASETOP_FAULTS_WRITER_DSN"    // the database it writes to, directly
	envWriterDevice = "LEASETOP_FAULTS_WRITER_DEVICE" // the device column of its rows
	envWriterFor    = "LEASETOP_FAULTS_WRITER_FOR"    // a duration: the writer exits 0 after it (default: at SIGTERM)
)

// writerAppName begins the application_name of a writer's connections,
// followed by its device and its pid.
const writerAppName = "faults writer"

// writeEvery is the pause between a writer's fenced writes.
const writeEvery = 20 * time.Millisecond

func isWriter() bool { return os.Getenv(envWriter) == "1" }

// writerEnv makes a `leasetop run` command of this test binary a writer on
// dsn, labelled device.
func writerEnv(dsn, device string) []string {
	return []string{envWriter + "=1", envWriterDSN + "=" + dsn, envWriterDevice + "=" + device}
}

// writerFor bounds a writer's work: with it the writer exits 0 after d, so
// its `leasetop run` releases the lease and exits (a run that ends).
func writerFor(d time.Duration) []string { return []string{envWriterFor + "=" + d.String()} }

// writerMain is the command the process faults run under `leasetop run`:
// with the token `leasetop run` passes in the environment it makes a fenced
// write (device.WriteChunk: the fence check and the insert in one
// transaction, a refusal recorded as such) every writeEvery, and on SIGTERM
// (or after LEASETOP_FAULTS_WRITER_FOR) one last attempt before it exits 0. audit.Check then proves that no
// accepted write began outside its run's grant.
func writerMain() int {
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	if err := write(term); err != nil {
		fmt.Fprintln(os.Stderr, "writer:", err)
		return 1
	}
	return 0
}

func write(term <-chan os.Signal) error {
	tok, err := lease.TokenFromEnv(os.Getenv)
	if err != nil {
		return err
	}
	ctx := context.Background()
	cfg, err := data.ParsePoolConfig(os.Getenv(envWriterDSN))
	if err != nil {
		return err
	}
	// A writer frozen inside its transaction would hold the lease row FOR
	// SHARE and block every takeover: the server ends such a session.
	cfg.ConnConfig.RuntimeParams["idle_in_transaction_session_timeout"] = "500"
	label := os.Getenv(envWriterDevice)
	// The test finds the command's pid here (rig.commandPID).
	cfg.ConnConfig.RuntimeParams["application_name"] = fmt.Sprintf("%s %s %d", writerAppName, label, os.Getpid())
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return err
	}
	store := data.New(pool)
	defer store.Close()
	attempt := func(chunk int) {
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if _, err := device.WriteChunk(wctx, store, tok, label, chunk); err != nil {
			fmt.Fprintln(os.Stderr, "writer:", err) // nothing was written; go on
		}
	}
	var done <-chan time.Time // nil: never
	if v := os.Getenv(envWriterFor); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("%s: %w", envWriterFor, err)
		}
		done = time.After(d)
	}
	tick := time.NewTicker(writeEvery)
	defer tick.Stop()
	for chunk := 1; ; chunk++ {
		select {
		case <-term:
			attempt(chunk)
			return nil
		case <-done:
			attempt(chunk)
			return nil
		case <-tick.C:
			attempt(chunk)
		}
	}
}
