package pgserver

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrNoBouncer is returned by StartBouncer when no pgbouncer binary can be
// found. Its message says how to install it.
var ErrNoBouncer = errors.New("no pgbouncer binary found on PATH or in /usr/sbin: install it (Debian/Ubuntu: apt-get install pgbouncer)")

// BouncerOptions configure StartBouncer.
type BouncerOptions struct {
	// PoolMode is PgBouncer's pool_mode. Default "transaction": each
	// transaction may run on another server connection, as in most
	// production deployments.
	PoolMode string
	// PoolSize is default_pool_size: server connections per database and
	// user. Default 20.
	PoolSize int
	// Settings are extra settings of the [pgbouncer] section.
	Settings map[string]string
}

// Bouncer is a running PgBouncer in front of a Server: the transaction
// pooler most production PostgreSQL sits behind. Clients log in with the
// server's own roles and passwords: PgBouncer reads a role's SCRAM secret
// from the server (auth_query, as the superuser) and passes the client's
// SCRAM proof on to the server, so test roles made on the fly work through
// it.
type Bouncer struct {
	dir      string // temporary folder: configuration, auth file, log, pid file
	bin      string
	port     int
	target   int    // the server's port
	password string // the server superuser's, for URL
	opts     BouncerOptions
	cred     *syscall.Credential

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd exits
	died string        // how PgBouncer ended when nobody stopped it (Died)
}

// StartBouncer starts PgBouncer in front of every database of s, on a free
// port of 127.0.0.1, run as the "postgres" system user when the current user
// is root (PgBouncer refuses root, as PostgreSQL does), and waits until it
// passes a connection through to s.
func (s *Server) StartBouncer(ctx context.Context, opts BouncerOptions) (*Bouncer, error) {
	bin, err := findBouncer()
	if err != nil {
		return nil, err
	}
	if opts.PoolMode == "" {
		opts.PoolMode = "transaction"
	}
	if opts.PoolSize == 0 {
		opts.PoolSize = 20
	}
	b := &Bouncer{bin: bin, target: s.port, password: s.password, opts: opts, cred: s.cred}
	if b.dir, err = os.MkdirTemp("", "leasetop-pgbouncer-"); err != nil {
		return nil, fmt.Errorf("create temporary folder: %w", err)
	}
	if err := b.writeAuthFile(); err != nil {
		b.removeDir()
		return nil, err
	}
	var startErr error
	for range 5 { // another port when the one picked was taken in the meantime
		if b.port, startErr = freePort(); startErr != nil {
			break
		}
		if startErr = b.start(ctx); startErr == nil {
			return b, nil
		}
	}
	b.removeDir()
	return nil, startErr
}

// findBouncer returns the pgbouncer binary: the one on PATH, else Debian's.
func findBouncer() (string, error) {
	if p, err := exec.LookPath("pgbouncer"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/sbin/pgbouncer"); err == nil {
		return "/usr/sbin/pgbouncer", nil
	}
	return "", ErrNoBouncer
}

// writeAuthFile writes the auth file with the superuser's password, the
// auth_user that runs auth_query, and gives the folder to the user
// PgBouncer runs as.
func (b *Bouncer) writeAuthFile() error {
	authFile := filepath.Join(b.dir, "userlist.txt")
	if err := os.WriteFile(authFile, []byte(`"postgres" "`+b.password+`"`+"\n"), 0o600); err != nil {
		return fmt.Errorf("write pgbouncer auth file: %w", err)
	}
	if b.cred != nil {
		for _, p := range []string{b.dir, authFile} {
			if err := os.Chown(p, int(b.cred.Uid), int(b.cred.Gid)); err != nil {
				return fmt.Errorf("chown %s to postgres: %w", p, err)
			}
		}
	}
	return nil
}

// authQuery is PgBouncer 1.18's own auth_query with every name qualified.
// It runs as the superuser in the database the client asked for, whose
// owner may have set the search_path and planted twins of now() and of
// the operators in public: PgBouncer's default, unqualified,
// would run them as the superuser.
const authQuery = "SELECT rolname, CASE WHEN rolvaliduntil OPERATOR(pg_catalog.<) pg_catalog.now() THEN NULL ELSE rolpassword END " +
	"FROM pg_catalog.pg_authid WHERE rolname OPERATOR(pg_catalog.=) $1 AND rolcanlogin"

// writeConfig writes pgbouncer.ini for the current port.
func (b *Bouncer) writeConfig() (string, error) {
	settings := map[string]string{
		"listen_addr":       "127.0.0.1",
		"listen_port":       strconv.Itoa(b.port),
		"unix_socket_dir":   "",
		"pool_mode":         b.opts.PoolMode,
		"default_pool_size": strconv.Itoa(b.opts.PoolSize),
		"max_client_conn":   "1000",
		"auth_type":         "scram-sha-256",
		"auth_file":         filepath.Join(b.dir, "userlist.txt"),
		"auth_user":         "postgres",
		"auth_query":        authQuery,
		"logfile":           filepath.Join(b.dir, "pgbouncer.log"),
		"pidfile":           filepath.Join(b.dir, "pgbouncer.pid"),
	}
	for k, v := range b.opts.Settings {
		settings[k] = v
	}
	ini := "[databases]\n* = host=127.0.0.1 port=" + strconv.Itoa(b.target) + "\n\n[pgbouncer]\n"
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		ini += k + " = " + settings[k] + "\n"
	}
	path := filepath.Join(b.dir, "pgbouncer.ini")
	if err := os.WriteFile(path, []byte(ini), 0o600); err != nil {
		return "", fmt.Errorf("write pgbouncer.ini: %w", err)
	}
	if b.cred != nil {
		if err := os.Chown(path, int(b.cred.Uid), int(b.cred.Gid)); err != nil {
			return "", fmt.Errorf("chown %s to postgres: %w", path, err)
		}
	}
	return path, nil
}

// start runs PgBouncer in the foreground (a child this process owns and
// waits for, which gets SIGINT if this process dies) and waits until it
// passes a connection through.
func (b *Bouncer) start(ctx context.Context) error {
	ini, err := b.writeConfig()
	if err != nil {
		return err
	}
	// Not CommandContext: PgBouncer outlives the start call and is stopped by Stop.
	cmd := exec.Command(b.bin, ini)
	cmd.Dir = b.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: b.cred, Setpgid: true, Pdeathsig: syscall.SIGINT}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start pgbouncer: %w", err)
	}
	done := make(chan struct{})
	go func() {
		err := cmd.Wait()
		b.mu.Lock()
		if b.cmd == cmd { // not Stop's doing
			b.died = fmt.Sprintf("%v; its log ends: %s", err, b.logTail(5))
		}
		b.mu.Unlock()
		close(done)
	}()
	b.mu.Lock()
	b.cmd, b.done = cmd, done
	b.mu.Unlock()
	if err := b.waitReady(ctx, done); err != nil {
		b.Stop()
		return err
	}
	return nil
}

// waitReady polls until a connection through PgBouncer reaches the server,
// PgBouncer exits, or 30 s pass.
func (b *Bouncer) waitReady(ctx context.Context, exited <-chan struct{}) error {
	return waitAccepting(ctx, b.URL("postgres"), "pgbouncer", exited, func() string {
		return fmt.Sprintf("port %d: %s", b.port, b.lastLogLine())
	})
}

// Died says how PgBouncer ended when it ended by itself, not by Stop or
// Close (its exit status and the end of its log), or "" when it did not:
// what a test that lost its pooler reports.
func (b *Bouncer) Died() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.died
}

// logTail returns the last n lines of PgBouncer's log, on one line.
func (b *Bouncer) logTail(n int) string {
	out, err := os.ReadFile(filepath.Join(b.dir, "pgbouncer.log"))
	if err != nil {
		return "no log"
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], " | ")
}

// lastLogLine returns the last line of PgBouncer's log, for start-up errors.
func (b *Bouncer) lastLogLine() string {
	out, err := os.ReadFile(filepath.Join(b.dir, "pgbouncer.log"))
	if err != nil {
		return "no log"
	}
	return lastLine(string(out))
}

// URL returns a connection URL for database db through PgBouncer as the
// superuser "postgres". The pgx connection defaults apply: a client that
// caches prepared statements fails through a transaction pooler, as it
// would in production.
func (b *Bouncer) URL(db string) string {
	u := url.URL{
		Scheme:   "postgres",
		User:     url.UserPassword("postgres", b.password),
		Host:     net.JoinHostPort("127.0.0.1", strconv.Itoa(b.port)),
		Path:     "/" + db,
		RawQuery: "sslmode=disable",
	}
	return u.String()
}

// Via returns dsn (a URL to the server) pointed at PgBouncer instead: the
// same user, password, database and parameters.
func (b *Bouncer) Via(dsn string) (string, error) {
	u, err := url.Parse(dsn)
	if err != nil || u.Scheme == "" {
		return "", errors.New("pgserver: Via needs a postgres:// URL")
	}
	u.Host = net.JoinHostPort("127.0.0.1", strconv.Itoa(b.port))
	return u.String(), nil
}

// Dir returns the folder of its configuration and log; Close removes it.
func (b *Bouncer) Dir() string { return b.dir }

// PID returns PgBouncer's process id, or 0 when stopped.
func (b *Bouncer) PID() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cmd == nil || b.cmd.Process == nil {
		return 0
	}
	return b.cmd.Process.Pid
}

// Stop stops PgBouncer with SIGINT (its safe shutdown: it waits for the
// transactions in flight) and waits for it; after 10 s it sends SIGTERM
// (immediate shutdown), then kills it. Restart brings it back on the same
// port.
func (b *Bouncer) Stop() {
	b.mu.Lock()
	cmd, done := b.cmd, b.done
	b.cmd, b.done = nil, nil
	b.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-done:
		return
	case <-time.After(10 * time.Second):
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// Restart starts a stopped PgBouncer again on the same port.
func (b *Bouncer) Restart(ctx context.Context) error { return b.start(ctx) }

// Close stops PgBouncer and removes its folder. It is safe to call twice.
func (b *Bouncer) Close() {
	b.Stop()
	b.removeDir()
}

func (b *Bouncer) removeDir() {
	if b.dir != "" {
		_ = os.RemoveAll(b.dir)
	}
}
