package pgserver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// StandbyOptions configure StartStandby.
type StandbyOptions struct {
	// Options are the standby server's own (fsync, settings, log).
	Options
	// Name is the standby's application_name on the primary, the name
	// synchronous_standby_names refers to. Default "leasetop_standby".
	Name string
}

// StartStandby makes a streaming hot standby of s: a base backup with
// pg_basebackup -R -X stream (which writes primary_conninfo and
// standby.signal), started on a free port of 127.0.0.1. It waits until the
// standby accepts read-only connections. The standby has s's roles and
// passwords; Close stops it and removes its folder, Promote makes it a
// primary.
func (s *Server) StartStandby(ctx context.Context, opts StandbyOptions) (*Server, error) {
	if opts.Name == "" {
		opts.Name = "leasetop_standby"
	}
	if err := s.allowReplication(ctx); err != nil {
		return nil, err
	}
	st := &Server{bin: s.bin, opts: opts.Options, password: s.password, cred: s.cred}
	var err error
	if st.dir, err = os.MkdirTemp("", DirPrefix+"standby-"); err != nil {
		return nil, fmt.Errorf("create temporary folder: %w", err)
	}
	if st.cred != nil {
		if err := os.Chown(st.dir, int(st.cred.Uid), int(st.cred.Gid)); err != nil {
			st.removeDir()
			return nil, fmt.Errorf("chown %s to postgres: %w", st.dir, err)
		}
	}
	conninfo := fmt.Sprintf("host=127.0.0.1 port=%d user=postgres application_name=%s", s.port, opts.Name)
	cmd := st.command(ctx, "pg_basebackup", "-d", conninfo, "-D", st.dataDir(), "-R", "-X", "stream",
		"--checkpoint=fast", "--no-sync")
	cmd.Env = append(cmd.Env, "PGPASSWORD="+s.password)
	if out, err := cmd.CombinedOutput(); err != nil {
		st.removeDir()
		return nil, fmt.Errorf("pg_basebackup: %w: %s", err, lastLine(string(out)))
	}
	if err := st.startWithRetry(ctx); err != nil {
		st.removeDir()
		return nil, err
	}
	return st, nil
}

// allowReplication makes sure pg_hba.conf lets the superuser open a
// replication connection from 127.0.0.1 (initdb's file does; a line is
// added and the configuration reloaded when it does not).
func (s *Server) allowReplication(ctx context.Context) error {
	hba := filepath.Join(s.dataDir(), "pg_hba.conf")
	text, err := os.ReadFile(hba)
	if err != nil {
		return fmt.Errorf("read pg_hba.conf: %w", err)
	}
	for _, line := range strings.Split(string(text), "\n") {
		if f := strings.Fields(line); len(f) >= 4 && f[0] == "host" && f[1] == "replication" &&
			(f[2] == "all" || f[2] == "postgres") && f[3] == "127.0.0.1/32" {
			return nil
		}
	}
	f, err := os.OpenFile(hba, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("open pg_hba.conf: %w", err)
	}
	_, err = f.WriteString("\nhost replication all 127.0.0.1/32 scram-sha-256\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write pg_hba.conf: %w", err)
	}
	return s.exec(ctx, `SELECT pg_reload_conf()`)
}

// Promote ends recovery on a standby (pg_ctl promote): it becomes a primary
// on a new timeline and accepts writes. It waits until it does.
func (s *Server) Promote(ctx context.Context) error {
	cmd := s.command(ctx, "pg_ctl", "promote", "-D", s.dataDir(), "-w", "-t", "60")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("pg_ctl promote: %w: %s", err, lastLine(string(out)))
	}
	return nil
}

// InRecovery reports whether the server is a standby (pg_is_in_recovery()).
func (s *Server) InRecovery(ctx context.Context) (bool, error) {
	var in bool
	err := s.queryRow(ctx, `SELECT pg_is_in_recovery()`, &in)
	return in, err
}

// WaitReplayed waits until the standby s has replayed everything primary
// had written when WaitReplayed was called, or ctx ends.
func (s *Server) WaitReplayed(ctx context.Context, primary *Server) error {
	var lsn string
	if err := primary.queryRow(ctx, `SELECT pg_current_wal_insert_lsn()::text`, &lsn); err != nil {
		return fmt.Errorf("read the primary's WAL position: %w", err)
	}
	for {
		var done bool
		err := s.queryRow(ctx, `SELECT coalesce(pg_last_wal_replay_lsn() >= $1::pg_lsn, false)`, &done, lsn)
		if err == nil && done {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("standby on port %s did not replay up to %s: %w", strconv.Itoa(s.port), lsn, ctx.Err())
		case <-time.After(10 * time.Millisecond): // polling a condition until ctx ends
		}
	}
}

// exec runs one statement as the superuser on the maintenance database.
func (s *Server) exec(ctx context.Context, sql string) error {
	conn, err := pgx.Connect(ctx, s.URL("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

// queryRow scans one row of sql, run as the superuser on the maintenance
// database, into dst.
func (s *Server) queryRow(ctx context.Context, sql string, dst any, args ...any) error {
	conn, err := pgx.Connect(ctx, s.URL("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	return conn.QueryRow(ctx, sql, args...).Scan(dst)
}

// Synchronous makes s (a primary) replicate synchronously to the standby
// named name (StandbyOptions.Name): with synchronous_standby_names set, a
// commit returns only once that standby has flushed it. s must have been
// started with synchronous_commit = on (Options.Settings: the throwaway
// server's default is off, and a start-up setting outranks ALTER SYSTEM). It
// waits up to 30 s until the standby streams as the synchronous one.
func (s *Server) Synchronous(ctx context.Context, name string) error {
	var commit string
	if err := s.queryRow(ctx, `SELECT current_setting('synchronous_commit')`, &commit); err != nil {
		return fmt.Errorf("synchronous replication: %w", err)
	}
	if commit != "on" {
		return fmt.Errorf("synchronous replication: synchronous_commit is %q: start the primary with synchronous_commit=on", commit)
	}
	for _, stmt := range []string{`ALTER SYSTEM SET synchronous_standby_names = ` + quoteLiteral(name), `SELECT pg_reload_conf()`} {
		if err := s.exec(ctx, stmt); err != nil {
			return fmt.Errorf("synchronous replication: %w", err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		var sync bool
		err := s.queryRow(ctx, `SELECT EXISTS (SELECT FROM pg_stat_replication WHERE application_name = $1 AND sync_state = 'sync')`, &sync, name)
		if err == nil && sync {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("standby %s did not become synchronous: %w", name, ctx.Err())
		case <-time.After(10 * time.Millisecond): // polling a condition until ctx ends
		}
	}
}

// Detach stops the standby s streaming from its primary (primary_conninfo
// emptied): whatever the primary commits from now on never reaches s, as
// with an asynchronous standby that has fallen behind when the primary
// dies. It waits up to 30 s until the WAL receiver has stopped.
func (s *Server) Detach(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, stmt := range []string{`ALTER SYSTEM SET primary_conninfo = ''`, `SELECT pg_reload_conf()`} {
		if err := s.exec(ctx, stmt); err != nil {
			return fmt.Errorf("detach the standby: %w", err)
		}
	}
	for {
		var streaming bool
		err := s.queryRow(ctx, `SELECT EXISTS (SELECT FROM pg_stat_wal_receiver)`, &streaming)
		if err == nil && !streaming {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the standby on port %d still streams: %w", s.port, ctx.Err())
		case <-time.After(10 * time.Millisecond): // polling a condition until ctx ends
		}
	}
}

// quoteLiteral quotes s as an SQL string literal.
func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
