package demo_test

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/testkit/proctest"
	"github.com/leasetop/leasetop/internal/testkit/syncbuf"
)

// demoProc is a real `leasetop` process whose output the test reads as it
// comes.
type demoProc struct {
	*proctest.Process
	t      *testing.T
	cmd    *exec.Cmd
	out    io.Closer       // the read end of its stdout
	stderr *syncbuf.Buffer // what it wrote to stderr

	mu      sync.Mutex
	lines   []string
	changed chan struct{} // signalled after each stdout line
	done    chan struct{} // closed when its stdout is read to the end and it has exited
}

// startLeasetop starts the leasetop binary with args and no DATABASE_URL
// (the demo then starts its own server unless --dsn is given).
func startLeasetop(t *testing.T, args ...string) *demoProc {
	t.Helper()
	return startLeasetopEnv(t, nil, args...)
}

// startLeasetopEnv is startLeasetop with extra environment ("NAME=value").
func startLeasetopEnv(t *testing.T, env []string, args ...string) *demoProc {
	t.Helper()
	p := &demoProc{t: t, changed: make(chan struct{}, 1), done: make(chan struct{})}
	cmd := exec.Command(leasetopBin, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DATABASE_URL=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	stdout, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = w
	started := false
	t.Cleanup(func() { // runs after the process is killed (cleanups run last first)
		if started {
			<-p.done
		}
		_ = w.Close()
		_ = stdout.Close()
	})
	p.Process = proctest.Start(t, cmd)
	started = true
	_ = w.Close() // the child has its copy: the read end sees EOF when the child's side closes
	p.cmd, p.out, p.stderr = cmd, stdout, &p.Stderr
	go func() { // owned by p: done closes after it ends, and the cleanup above waits for done
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.lines = append(p.lines, sc.Text())
			p.mu.Unlock()
			select {
			case p.changed <- struct{}{}:
			default:
			}
		}
		<-p.Done()
		close(p.done)
	}()
	return p
}

// closeStdout stops reading the process's output, like `| head` does.
func (p *demoProc) closeStdout() { _ = p.out.Close() }

// waitFor waits until a stdout line matches re and returns its submatches.
func (p *demoProc) waitFor(re *regexp.Regexp, timeout time.Duration) []string {
	p.t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	seen := 0
	for {
		p.mu.Lock()
		lines := p.lines[seen:]
		seen = len(p.lines)
		p.mu.Unlock()
		for _, l := range lines {
			if m := re.FindStringSubmatch(l); m != nil {
				return m
			}
		}
		select {
		case <-p.changed:
		case <-p.done:
			p.mu.Lock()
			more := len(p.lines) > seen
			p.mu.Unlock()
			if !more {
				p.t.Fatalf("leasetop exited before printing a line matching %q\nstdout:\n%s\nstderr:\n%s", re, p.stdout(), p.stderr.String())
			}
		case <-deadline.C:
			p.t.Fatalf("no line matching %q within %s\nstdout:\n%s", re, timeout, p.stdout())
		}
	}
}

// wait waits for the process to exit and returns its exit code.
func (p *demoProc) wait(timeout time.Duration) int {
	p.t.Helper()
	select {
	case <-p.done:
	case <-time.After(timeout):
		p.t.Fatalf("leasetop did not exit within %s\nstdout:\n%s", timeout, p.stdout())
	}
	var exitErr *exec.ExitError
	switch err := p.Err(); {
	case err == nil:
		return 0
	case errors.As(err, &exitErr):
		return exitErr.ExitCode() // -1 when a signal killed it: the demo must exit by itself
	default:
		p.t.Fatalf("wait: %v", err)
		return -1
	}
}

func (p *demoProc) stdout() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.lines, "\n")
}

// withoutDSNWarning returns stderr without its first line if that is
// leasetop's warning about a password in --dsn (every test database URL
// carries one).
func withoutDSNWarning(stderr string) string {
	if first, rest, _ := strings.Cut(stderr, "\n"); strings.HasPrefix(first, "leasetop: warning: --dsn carries a password") {
		return rest
	}
	return stderr
}
