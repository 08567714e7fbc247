package supervise_test

import (
	"context"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/internal/testkit/proctest"
)

// The rule for signals (docs/cli.md, Exit codes): SIGINT, SIGTERM or SIGHUP stops
// every command, which cleans up and then exits 128+N by itself, saying so
// in one line; the signal does not kill it. The exceptions: the exporter
// takes SIGINT and SIGTERM as its normal stop (exit 0), and run forwards
// signals to its command once the command runs. watch's case needs a
// terminal and is in internal/faults (TestWatchInterrupted); the demo's is
// in internal/demo (TestEmbeddedServerIsAlwaysRemoved).

// signalCase is a signal and its name as leasetop prints it.
type signalCase struct {
	sig  syscall.Signal
	name string
}

// interruptions are the signals the rule is about.
func interruptions() []signalCase {
	return []signalCase{{syscall.SIGINT, "SIGINT"}, {syscall.SIGTERM, "SIGTERM"}, {syscall.SIGHUP, "SIGHUP"}}
}

// wantInterrupted checks that p, sent sig, exited by itself with 128+N and
// that the last line of its stderr starts with "leasetop: "+want.
func wantInterrupted(t *testing.T, p *proctest.Process, sig syscall.Signal, want string) {
	t.Helper()
	code := p.Wait(t, 30*time.Second)
	stderr := p.Stderr.String()
	if p.KilledBy() != 0 {
		t.Fatalf("killed by %v, want it to catch %v, clean up and exit %d; stderr: %q", p.KilledBy(), sig, 128+int(sig), stderr)
	}
	if code != 128+int(sig) {
		t.Errorf("exit code after %v = %d, want %d; stderr: %q", sig, code, 128+int(sig), stderr)
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "leasetop: "+want) {
		t.Errorf("last line of stderr = %q, want %q", last, "leasetop: "+want+"...")
	}
	if strings.Contains(stderr, "goroutine ") || strings.Contains(stderr, "panic") {
		t.Errorf("stderr shows a panic: %q", stderr)
	}
}

// silentServer is a database that hangs at connect: it accepts TCP
// connections and never answers. accepted is closed at the first
// connection.
func silentServer(t *testing.T) (dsn string, accepted <-chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan struct{})
	var (
		mu    sync.Mutex
		conns []net.Conn
		wg    sync.WaitGroup
		once  sync.Once
	)
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			once.Do(func() { close(ch) })
		}
	})
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
		for _, c := range conns {
			c.Close()
		}
	})
	return "postgres://leasetop@" + ln.Addr().String() + "/app", ch
}

// Every command that connects, interrupted while its connection hangs (a
// database that does not answer: the case where a user presses ctrl+c), by
// each signal. Without the rule they were killed by the signal, or (run)
// ignored it until the connect timed out.
func TestInterruptedWhileConnecting(t *testing.T) {
	e := newEnv(t)
	commands := []struct {
		name string
		args []string // after --dsn
		// daemonStop: SIGINT and SIGTERM are the command's normal stop (exit 0).
		daemonStop bool
	}{
		{"migrate", []string{"migrate"}, false},
		{"ls", []string{"ls"}, false},
		{"events", []string{"events"}, false},
		{"events --follow", []string{"events", "--follow"}, false},
		{"release", []string{"release", "--account", "a", "--session", "s", "--reason", "r"}, false},
		{"run", []string{"run", "--account", "a", "--session", "s", "--", "sh", "-c", "echo ran"}, false},
		{"run --wait", []string{"run", "--account", "a", "--session", "s", "--wait", "--", "sh", "-c", "echo ran"}, false},
		{"bench", []string{"bench", "--only", "select1"}, false},
		{"demo --headless", []string{"demo", "--headless"}, false},
		{"exporter", []string{"exporter", "--listen", "127.0.0.1:0"}, true},
	}
	for _, c := range commands {
		for _, sc := range interruptions() {
			sig := sc.sig
			t.Run(c.name+"/"+sc.name, func(t *testing.T) {
				t.Parallel()
				dsn, accepted := silentServer(t)
				args := append([]string{c.args[0], "--dsn", dsn}, c.args[1:]...)
				p := e.leasetop(t, args...)
				select {
				case <-accepted:
				case <-p.Done():
					t.Fatalf("exited %d before it connected; stderr: %q", p.Code(), p.Stderr.String())
				case <-time.After(30 * time.Second):
					t.Fatalf("no connection after 30s; stderr: %q", p.Stderr.String())
				}
				p.Signal(t, sig)
				if c.daemonStop && sig != syscall.SIGHUP {
					if code := p.Wait(t, 30*time.Second); code != 0 || p.KilledBy() != 0 {
						t.Errorf("exit code after %v = %d (killed by %v), want 0: its normal stop; stderr: %q", sig, code, p.KilledBy(), p.Stderr.String())
					}
					return
				}
				wantInterrupted(t, p, sig, "interrupted by "+sc.name)
				if strings.Contains(p.Stdout.String(), "ran") {
					t.Errorf("the command ran: stdout %q", p.Stdout.String())
				}
			})
		}
	}
}

// The long-running commands, stopped by each signal while they work:
// events --follow following live, and bench in the middle of a workload
// (it removes what it created first).
func TestInterruptedWhileRunning(t *testing.T) {
	e := newEnv(t)
	commands := []struct {
		name  string
		args  []string
		ready string // on stderr once it works
		said  string // after "interrupted by SIGxxx" on its last line
	}{
		{"events --follow", []string{"events", "--follow"}, "following events live", ""},
		{"bench", []string{"bench", "--only", "select1", "--duration", "1m", "--warmup", "0s"}, "bench: select1", "; bench removed what it had created"},
	}
	for _, c := range commands {
		for _, sc := range interruptions() {
			t.Run(c.name+"/"+sc.name, func(t *testing.T) {
				p := e.leasetop(t, c.args...)
				pgtest.Eventually(t, 60*time.Second, c.name+" to print "+c.ready, func() bool {
					return strings.Contains(p.Stderr.String(), c.ready)
				})
				p.Signal(t, sc.sig)
				wantInterrupted(t, p, sc.sig, "interrupted by "+sc.name+c.said)
			})
		}
	}
	var schemas, leases int
	if err := e.pool.QueryRow(context.Background(), `SELECT
		(SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'lease\_bench\_%'),
		(SELECT count(*) FROM lease.session_lease WHERE account_id LIKE 'leasetop-bench-%')`).Scan(&schemas, &leases); err != nil {
		t.Fatal(err)
	}
	if schemas != 0 || leases != 0 {
		t.Errorf("after the interrupted benches: %d scratch schemas and %d of their leases left, want none", schemas, leases)
	}
}

// The exporter, serving a live feed: SIGINT and SIGTERM are its normal stop
// (0), SIGHUP interrupts it as it does every command (129).
func TestExporterStopsOnSignals(t *testing.T) {
	e := newEnv(t)
	for _, sc := range interruptions() {
		sig := sc.sig
		t.Run(sc.name, func(t *testing.T) {
			p := e.leasetop(t, "exporter", "--listen", "127.0.0.1:0")
			pgtest.Eventually(t, 30*time.Second, "the exporter's feed to go live", func() bool {
				return strings.Contains(p.Stderr.String(), "feed live")
			})
			p.Signal(t, sig)
			if sig == syscall.SIGHUP {
				wantInterrupted(t, p, sig, "interrupted by SIGHUP")
				return
			}
			if code := p.Wait(t, 30*time.Second); code != 0 || p.KilledBy() != 0 {
				t.Errorf("exit code after %v = %d (killed by %v), want 0; stderr: %q", sig, code, p.KilledBy(), p.Stderr.String())
			}
			if strings.Contains(p.Stderr.String(), "interrupted") {
				t.Errorf("stderr = %q, want no interruption line for its normal stop", p.Stderr.String())
			}
		})
	}
}

// run --wait, stopped by a signal while it waits: 128+N, the command never
// ran, the holder keeps its lease. SIGQUIT stops the wait too.
func TestRunInterruptedWhileWaiting(t *testing.T) {
	e := newEnv(t)
	run := uuid.New()
	if _, err := e.store.Acquire(context.Background(), testKey, run, time.Hour, "other"); err != nil {
		t.Fatal(err)
	}
	for _, sc := range append(interruptions(), signalCase{syscall.SIGQUIT, "SIGQUIT"}) {
		t.Run(sc.name, func(t *testing.T) {
			p := e.leasetop(t, "run", "--account", "acct", "--session", "sess", "--wait", "--", "sh", "-c", "echo ran")
			pgtest.Eventually(t, 30*time.Second, "leasetop to report it is waiting", func() bool { return strings.Contains(p.Stderr.String(), "waiting") })
			p.Signal(t, sc.sig)
			wantInterrupted(t, p, sc.sig, "interrupted by "+sc.name+" before the lease was acquired; nothing was run")
			if p.Stdout.String() != "" {
				t.Errorf("the command ran: %q", p.Stdout.String())
			}
			if got := e.holder(t); got.RunID != data.PublicRunID(run) {
				t.Errorf("holder = %v, want %v untouched", got.RunID, data.PublicRunID(run))
			}
		})
	}
}
