package supervise_test

import (
	"context"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/internal/testkit/proctest"
)

func TestRunPassesExitCodeAndToken(t *testing.T) {
	e := newEnv(t)
	script := `echo "$LEASETOP_ACCOUNT_ID|$LEASETOP_SESSION_ID|$LEASETOP_RUN_ID|$LEASETOP_FENCE"; exit 7`
	p := e.leasetop(t, "run", "--account", "acct", "--session", "sess", "--holder", "job 1", "--", "sh", "-c", script)
	if got := p.Wait(t, 30*time.Second); got != 7 {
		t.Fatalf("exit code = %d, want the command's 7; stderr: %s", got, p.Stderr.String())
	}
	if p.Stderr.String() != "" {
		t.Errorf("stderr = %q, want nothing", p.Stderr.String())
	}
	fields := strings.Split(strings.TrimSpace(p.Stdout.String()), "|")
	if len(fields) != 4 || fields[0] != "acct" || fields[1] != "sess" {
		t.Fatalf("child saw %q, want acct|sess|RUN|FENCE", p.Stdout.String())
	}
	run, err := uuid.Parse(fields[2])
	if err != nil {
		t.Fatalf("LEASETOP_RUN_ID = %q: %v", fields[2], err)
	}
	evs := e.events(t)
	if len(evs) != 2 || evs[0].Kind != data.KindAcquired || evs[1].Kind != data.KindReleased {
		t.Fatalf("events = %+v, want acquired then released", evs)
	}
	// LEASETOP_RUN_ID is the run's secret; the event shows its public id.
	if evs[0].RunID != data.PublicRunID(run) || strconv.FormatInt(evs[0].Fence, 10) != fields[3] || evs[0].Holder != "job 1" {
		t.Errorf("acquired event = %+v, want run %s fence %s holder %q", evs[0], data.PublicRunID(run), fields[3], "job 1")
	}
	if got := e.holder(t); got.RunID != uuid.Nil {
		t.Errorf("lease still held by %v after the command exited", got.RunID)
	}
}

func TestRunExitCodes(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name     string
		args     []string
		want     int
		wantErr  string // in stderr
		wantHeld bool   // the lease must not be left behind either way
	}{
		{"success", []string{"--", "true"}, 0, "", false},
		{"killed by a signal", []string{"--", "sh", "-c", "kill -KILL $$"}, 128 + 9, "", false},
		{"command not found", []string{"--", "/nonexistent/cmd"}, 127, "no such file", false},
		{"no command", []string{}, 2, "no command given", false},
		{"bad ttl", []string{"--ttl", "10ms", "--", "true"}, 2, "--ttl must be between", false},
		{"control character in holder", []string{"--holder", "a\x1b[2Jb", "--", "true"}, 2, "holder", false},
		{"unknown flag", []string{"--nope", "--", "true"}, 2, "nope", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"run", "--account", "acct", "--session", "sess"}, tt.args...)
			p := e.leasetop(t, args...)
			if got := p.Wait(t, 30*time.Second); got != tt.want {
				t.Errorf("exit code = %d, want %d; stderr: %s", got, tt.want, p.Stderr.String())
			}
			stderr := p.Stderr.String()
			if tt.wantErr != "" && !strings.Contains(strings.ToLower(stderr), tt.wantErr) {
				t.Errorf("stderr = %q, want it to mention %q", stderr, tt.wantErr)
			}
			if strings.Count(stderr, "\n") > 1 || strings.ContainsRune(stderr, 0x1b) || strings.Contains(stderr, "goroutine") {
				t.Errorf("stderr = %q, want at most one line, no escape, no stack trace", stderr)
			}
			if got := e.holder(t); got.RunID != uuid.Nil {
				t.Errorf("lease left held by %v", got.RunID)
			}
		})
	}
}

func TestRunBusyWithoutWait(t *testing.T) {
	e := newEnv(t)
	run := uuid.New()
	if _, err := e.store.Acquire(context.Background(), testKey, run, time.Minute, "other \x1b-free holder"); err == nil {
		t.Fatal("a holder label with ESC was accepted")
	}
	if _, err := e.store.Acquire(context.Background(), testKey, run, time.Minute, "other holder"); err != nil {
		t.Fatal(err)
	}
	p := e.leasetop(t, "run", "--account", "acct", "--session", "sess", "--", "sh", "-c", "echo ran")
	if got := p.Wait(t, 30*time.Second); got != 3 {
		t.Fatalf("exit code = %d, want 3 (busy); stderr: %s", got, p.Stderr.String())
	}
	stderr := p.Stderr.String()
	if strings.Contains(stderr, run.String()) {
		t.Errorf("stderr = %q names the holder's secret run id", stderr)
	}
	for _, want := range []string{data.PublicRunID(run).String(), `"other holder"`, "more", "--wait"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr = %q, want it to name %q", stderr, want)
		}
	}
	if strings.Count(stderr, "\n") != 1 || p.Stdout.String() != "" {
		t.Errorf("stderr = %q, stdout = %q; want one line and the command not run", stderr, p.Stdout.String())
	}
	if got := e.holder(t); got.RunID != data.PublicRunID(run) {
		t.Errorf("holder = %v, want %v untouched", got.RunID, data.PublicRunID(run))
	}
}

func TestRunForwardsSignals(t *testing.T) {
	e := newEnv(t)
	for _, tt := range []struct {
		sig  syscall.Signal
		name string
		code int
	}{{syscall.SIGUSR1, "USR1", 41}, {syscall.SIGTERM, "TERM", 42}, {syscall.SIGINT, "INT", 43}, {syscall.SIGHUP, "HUP", 44}} {
		t.Run(tt.name, func(t *testing.T) {
			script := `trap "exit ` + strconv.Itoa(tt.code) + `" ` + tt.name + `; echo ready; while :; do sleep 0.02; done`
			p := e.leasetop(t, "run", "--account", "acct", "--session", "sess", "--", "sh", "-c", script)
			pgtest.Eventually(t, 30*time.Second, "the command to start", func() bool { return strings.Contains(p.Stdout.String(), "ready") })
			p.Signal(t, tt.sig)
			if got := p.Wait(t, 30*time.Second); got != tt.code {
				t.Errorf("exit code after SIG%s = %d, want the command's %d; stderr: %s", tt.name, got, tt.code, p.Stderr.String())
			}
			if got := e.holder(t); got.RunID != uuid.Nil {
				t.Errorf("lease left held by %v", got.RunID)
			}
		})
	}
}

// What the command leaves running in its process group when it exits does
// not run on after the lease is released.
func TestRunKillsLeftovers(t *testing.T) {
	e := newEnv(t)
	p := e.leasetop(t, "run", "--account", "acct", "--session", "sess", "--", "sh", "-c", "sleep 60 & echo $$")
	if got := p.Wait(t, 30*time.Second); got != 0 {
		t.Fatalf("exit = %d, want 0; stderr: %s", got, p.Stderr.String())
	}
	pgid, err := strconv.Atoi(strings.TrimSpace(p.Stdout.String()))
	if err != nil {
		t.Fatalf("command printed %q, want its pid", p.Stdout.String())
	}
	pgtest.Eventually(t, 10*time.Second, "the background sleep to be killed", func() bool { return proctest.GroupGone(pgid) })
	if got := e.holder(t); got.RunID != uuid.Nil {
		t.Errorf("lease left held by %v", got.RunID)
	}
}

// TestRunKeepsDatabaseSecretsFromTheCommand: leasetop run hands its command
// the lease token but not its own database credentials (DATABASE_URL,
// PGPASSWORD, PGSSLPASSWORD) unless --pass-db-env asks for them.
func TestRunKeepsDatabaseSecretsFromTheCommand(t *testing.T) {
	e := newEnv(t)
	secrets := []string{"PGPASSWORD=hunter2", "PGSSLPASSWORD=keypass"}
	script := `echo "[$DATABASE_URL|$PGPASSWORD|$PGSSLPASSWORD|$LEASETOP_SESSION_ID]"`
	for _, tt := range []struct {
		flags []string
		want  string
	}{
		{nil, "[|||sess]"},
		{[]string{"--pass-db-env"}, "[" + e.db.URL + "|hunter2|keypass|sess]"},
	} {
		args := append([]string{"run", "--account", "acct", "--session", "sess"}, tt.flags...)
		p := e.leasetopEnv(t, secrets, append(args, "--", "sh", "-c", script)...)
		if got := p.Wait(t, 30*time.Second); got != 0 {
			t.Fatalf("leasetop run %v: exit %d, stderr %s", tt.flags, got, p.Stderr.String())
		}
		if got := strings.TrimSpace(p.Stdout.String()); got != tt.want {
			t.Errorf("leasetop run %v: the command saw %q, want %q", tt.flags, got, tt.want)
		}
	}
}

// TestRunWarnsAboutAPasswordInDSN: a password in --dsn is in every local
// user's process list for as long as leasetop runs: one warning line says
// so and where to put it instead, without the password.
func TestRunWarnsAboutAPasswordInDSN(t *testing.T) {
	e := newEnv(t)
	p := e.leasetop(t, "run", "--dsn", e.db.URL, "--account", "acct", "--session", "sess", "--", "sh", "-c", "echo ran")
	if got := p.Wait(t, 30*time.Second); got != 0 {
		t.Fatalf("exit %d, stderr %s", got, p.Stderr.String())
	}
	u, err := url.Parse(e.db.URL)
	if err != nil {
		t.Fatal(err)
	}
	pw, _ := u.User.Password()
	stderr := p.Stderr.String()
	if strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "--dsn carries a password") || !strings.Contains(stderr, "PGPASSFILE") {
		t.Errorf("stderr = %q, want one line warning about the password in --dsn", stderr)
	}
	if strings.Contains(stderr+p.Stdout.String(), pw) {
		t.Errorf("the output shows the password: %q", stderr)
	}
	if p.Stdout.String() != "ran\n" {
		t.Errorf("stdout = %q, want the command's", p.Stdout.String())
	}
}
