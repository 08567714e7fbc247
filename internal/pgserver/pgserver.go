// Package pgserver starts a throwaway PostgreSQL server from the installed
// server binaries: a fresh data directory in a temporary folder, a random port
// on 127.0.0.1, the socket inside the folder, and, when the current user is
// root, the server run as the "postgres" system user (PostgreSQL refuses root).
//
// The test harness (internal/testkit/pgtest), `leasetop demo` and `leasetop bench` all
// use it. Close always stops the server and removes the folder.
//
// The parts of a production deployment come from the same server:
// StartStandby makes a streaming hot standby of it (pg_basebackup -R -X
// stream), which can be stopped hard (StopImmediate), restarted, cut off
// from its primary (Detach: an asynchronous standby fallen behind) and
// promoted like a primary; Synchronous makes the primary wait for it. And
// StartBouncer puts a real PgBouncer in transaction mode in front of it.
package pgserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// ErrNoBinaries is returned by Start when no PostgreSQL server binaries can be
// found. Its message says how to install them.
var ErrNoBinaries = errors.New("no PostgreSQL server binaries (initdb, postgres) found on PATH or under /usr/lib/postgresql/*/bin: " +
	"install them (Debian/Ubuntu: apt-get install postgresql) or point leasetop at a server with --dsn")

// Options configure Start. The zero value is a fast, non-durable server.
type Options struct {
	// Fsync keeps fsync on, as in production (benchmarks). Default off.
	Fsync bool
	// Settings are extra "-c name=value" server settings.
	Settings map[string]string
	// Log receives the server's output. Default: discarded.
	Log *os.File
	// Env is extra environment ("NAME=value") for the server's processes,
	// for example LD_PRELOAD=libfaketime.so.1 to skew its clock in a test.
	Env []string
	// Claim, when set, is called with the server's temporary folder right
	// after it is made, before anything else is written to it (the demo
	// leaves a file there naming the process that owns the folder, so that
	// a later demo can remove it once that process is gone). Its error
	// stops Start.
	Claim func(dir string) error
	// Step, when set, is told each step of the start as it begins: "initdb"
	// (a new cluster), then "starting PostgreSQL" (until it accepts
	// connections): what a caller shows while a first start takes seconds.
	Step func(step string)
}

// DirPrefix begins the name of every server's temporary folder (in
// os.TempDir()).
const DirPrefix = "leasetop-pg-"

// Server is a running throwaway PostgreSQL server.
type Server struct {
	dir      string // temporary folder: data/ and the socket
	bin      string
	port     int
	password string
	opts     Options
	cred     *syscall.Credential

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd exits
}

// Start creates a data directory, starts the server and waits until it
// accepts connections.
func Start(ctx context.Context, opts Options) (*Server, error) {
	bin, err := FindBinaries()
	if err != nil {
		return nil, err
	}
	s := &Server{bin: bin, opts: opts, password: randomHex(16)}
	if s.cred, err = serverCredential(); err != nil {
		return nil, err
	}
	if s.dir, err = os.MkdirTemp("", DirPrefix); err != nil {
		return nil, fmt.Errorf("create temporary folder: %w", err)
	}
	if opts.Claim != nil {
		if err := opts.Claim(s.dir); err != nil {
			s.removeDir()
			return nil, err
		}
	}
	s.step("initdb")
	if err := s.initdb(ctx); err != nil {
		s.removeDir()
		return nil, err
	}
	s.step("starting PostgreSQL")
	if err := s.startWithRetry(ctx); err != nil {
		s.removeDir()
		return nil, err
	}
	return s, nil
}

// step tells Options.Step that step begins.
func (s *Server) step(step string) {
	if s.opts.Step != nil {
		s.opts.Step(step)
	}
}

// FindBinaries returns the folder holding initdb and postgres: the one on
// PATH, else the newest /usr/lib/postgresql/*/bin.
func FindBinaries() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real // a link on PATH to the installation's folder, which has the other tools too
		}
		dir := filepath.Dir(p)
		if _, err := os.Stat(filepath.Join(dir, "postgres")); err == nil {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "initdb")); err == nil {
			return dirs[i], nil
		}
	}
	return "", ErrNoBinaries
}

// serverCredential returns the credential to run the server with: nil when
// not root, the postgres system user's when root.
func serverCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, errors.New(`running as root, and PostgreSQL refuses root: create a "postgres" system user (useradd --system postgres) or run as another user`)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func (s *Server) dataDir() string { return filepath.Join(s.dir, "data") }

func (s *Server) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(s.bin, name), args...)
	cmd.Dir = s.dir
	cmd.Env = append(append(os.Environ(), "LC_ALL=C", "TZ=UTC"), s.opts.Env...)
	// Setpgid keeps a terminal's ctrl+c away from the server: its owner stops it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred, Setpgid: true}
	return cmd
}

func (s *Server) initdb(ctx context.Context) error {
	if s.cred != nil {
		if err := os.Chown(s.dir, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			return fmt.Errorf("chown %s to postgres: %w", s.dir, err)
		}
	}
	pwfile := filepath.Join(s.dir, "pwfile")
	if err := os.WriteFile(pwfile, []byte(s.password+"\n"), 0o600); err != nil {
		return fmt.Errorf("write password file: %w", err)
	}
	if s.cred != nil {
		_ = os.Chown(pwfile, int(s.cred.Uid), int(s.cred.Gid))
	}
	defer os.Remove(pwfile)
	cmd := s.command(ctx, "initdb", "--pgdata", s.dataDir(), "--username", "postgres",
		"--pwfile", pwfile, "--auth", "scram-sha-256", "--encoding", "UTF8", "--locale", "C", "--no-sync")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %w: %s", err, lastLine(string(out)))
	}
	return nil
}

// startWithRetry picks a free port and starts the server, trying another port
// when the one picked was taken in the meantime.
func (s *Server) startWithRetry(ctx context.Context) error {
	var err error
	for range 5 {
		if s.port, err = freePort(); err != nil {
			return err
		}
		if err = s.startServer(ctx); err == nil {
			return nil
		}
	}
	return err
}

func (s *Server) startServer(ctx context.Context) error {
	fsync := "off"
	if s.opts.Fsync {
		fsync = "on"
	}
	args := []string{"-D", s.dataDir(), "-p", strconv.Itoa(s.port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=" + s.dir,
		"-c", "fsync=" + fsync, "-c", "max_connections=300", "-c", "shared_buffers=128MB"}
	if !s.opts.Fsync {
		args = append(args, "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	}
	for k, v := range s.opts.Settings {
		args = append(args, "-c", k+"="+v)
	}
	// Not CommandContext: the server outlives the start call and is stopped by Stop.
	cmd := s.command(context.Background(), "postgres", args...)
	// If this process dies without stopping it, the server gets a fast shutdown.
	cmd.SysProcAttr.Pdeathsig = syscall.SIGINT
	if s.opts.Log != nil {
		cmd.Stdout, cmd.Stderr = s.opts.Log, s.opts.Log
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	s.mu.Lock()
	s.cmd, s.done = cmd, done
	s.mu.Unlock()
	if err := s.waitReady(ctx, done); err != nil {
		s.Stop()
		return err
	}
	return nil
}

// waitReady polls until the server accepts a connection, exits, or 30 s pass.
func (s *Server) waitReady(ctx context.Context, exited <-chan struct{}) error {
	return waitAccepting(ctx, s.URL("postgres"), "postgres", exited, func() string { return fmt.Sprintf("port %d", s.port) })
}

// waitAccepting polls until a connection to url succeeds, the process
// called name exits (exited closes; detail says where, for the error), or
// 30 s pass.
func waitAccepting(ctx context.Context, url, name string, exited <-chan struct{}, detail func() string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		conn, err := pgx.Connect(ctx, url)
		if err == nil {
			conn.Close(ctx)
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("%s exited during start-up (%s)", name, detail())
		case <-ctx.Done():
			return fmt.Errorf("%s did not accept connections within 30s: %w", name, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// URL returns a connection URL for database db as the superuser "postgres".
func (s *Server) URL(db string) string {
	u := url.URL{
		Scheme:   "postgres",
		User:     url.UserPassword("postgres", s.password),
		Host:     net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)),
		Path:     "/" + db,
		RawQuery: "sslmode=disable",
	}
	return u.String()
}

// Port returns the TCP port the server listens on.
func (s *Server) Port() int { return s.port }

// Dir returns the temporary folder that holds the data directory; Close
// removes it.
func (s *Server) Dir() string { return s.dir }

// PID returns the postmaster's process id, or 0 when stopped.
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Stop shuts the server down (fast shutdown: open transactions are rolled
// back, clients disconnected) and waits for it, keeping the data directory so
// Restart can bring it back on the same port.
func (s *Server) Stop() { s.stop(syscall.SIGINT) }

// StopImmediate stops the server as `pg_ctl stop -m immediate` does (SIGQUIT:
// no checkpoint, crash recovery on the next start), the way a crashed
// primary stops, and waits for it. Restart brings it back.
func (s *Server) StopImmediate() { s.stop(syscall.SIGQUIT) }

// stop sends sig to the postmaster and waits for it; after 10 s it sends
// SIGQUIT (immediate shutdown), then kills it.
func (s *Server) stop(sig syscall.Signal) {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd, s.done = nil, nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-done:
		return
	case <-time.After(10 * time.Second):
	}
	_ = cmd.Process.Signal(syscall.SIGQUIT) // immediate shutdown
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// Restart starts a stopped server again on the same port and data directory.
func (s *Server) Restart(ctx context.Context) error {
	return s.startServer(ctx)
}

// Close stops the server and removes its folder. It is safe to call twice.
func (s *Server) Close() {
	s.Stop()
	s.removeDir()
}

func (s *Server) removeDir() {
	if s.dir != "" {
		_ = os.RemoveAll(s.dir)
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
