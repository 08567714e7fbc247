package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/cli"
	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/internal/testkit/proctest"
	"github.com/leasetop/leasetop/internal/testkit/syncbuf"
	"github.com/leasetop/leasetop/lease"
)

// leasetopIn runs a command in-process with DATABASE_URL=dsn and stdin.
func leasetopIn(ctx context.Context, dsn, stdin string, args ...string) (stdout, stderr string, code int) {
	var out, errOut syncbuf.Buffer
	env := map[string]string{"DATABASE_URL": dsn, "HOME": os.TempDir()}
	err := cli.Run(ctx, cli.Env{Args: args, Getenv: func(k string) string { return env[k] },
		Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errOut})
	code = cli.Report(&errOut, err)
	return out.String(), errOut.String(), code
}

// startRun starts `leasetop run` with args as a process of its own, with
// DATABASE_URL=dsn, killed when the test ends.
func startRun(t *testing.T, dsn string, args ...string) *proctest.Process {
	t.Helper()
	bin, err := leasetopBinary()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{"run"}, args...)...)
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "DATABASE_URL=") || strings.HasPrefix(kv, "PG")
	}), "DATABASE_URL="+dsn)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return proctest.Start(t, cmd)
}

// TestRunCommandReadsItsSteers is the README's example: a `leasetop run`
// command reads the steers sent to its conversation with `leasetop
// inbox` (each printed once, acknowledged by its run), `send --wait acked`
// returns once it did, and `send --cancel` stops the command: run exits 8
// and releases the lease.
func TestRunCommandReadsItsSteers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	bin, err := leasetopBinary()
	if err != nil {
		t.Fatal(err)
	}
	dsn, _ := pgtest.Login(t, db, "lease_app")
	script := `echo started; while true; do if msg=$(` + bin + ` inbox --wait 30s); then echo "steer: $msg"; fi; done`
	p := startRun(t, dsn, "--account", "acme", "--session", "chat-1", "--ttl", "3s", "--on-cancel", "stop", "--grace", "2s",
		"--pass-db-env", "--", "sh", "-c", script)
	pgtest.Eventually(t, 30*time.Second, "the command to start", func() bool { return strings.Contains(p.Stdout.String(), "started") })
	for _, body := range []string{"also check the March invoices", "and April"} {
		out, errOut, code := leasetop(ctx, dsn, "send", "--account", "acme", "--session", "chat-1", "--wait", "acked", "--sender", "phone", body)
		if code != 0 || !strings.Contains(out, "acknowledged by run ") {
			t.Fatalf("send --wait acked %q: exit %d: %s%s", body, code, out, errOut)
		}
	}
	// inbox acknowledges a steer before it exits and the script echoes it:
	// the acknowledgement comes first.
	want := "steer: also check the March invoices\nsteer: and April\n"
	pgtest.Eventually(t, 30*time.Second, "the command to print both steers", func() bool {
		return strings.Contains(p.Stdout.String(), want)
	})
	if got := p.Stdout.String(); strings.Count(got, "steer: ") != 2 {
		t.Fatalf("the command printed %q, want both steers once, in order", got)
	}
	out, errOut, code := leasetop(ctx, dsn, "send", "--account", "acme", "--session", "chat-1", "--cancel", "--wait", "acked",
		"--sender", "browser", "user pressed stop")
	if code != 0 {
		t.Fatalf("send --cancel: exit %d: %s%s", code, out, errOut)
	}
	if code := p.Wait(t, 30*time.Second); code != cli.ExitCancelled {
		t.Fatalf("run after the cancel: exit %d, want %d: %s", code, cli.ExitCancelled, p.Stderr.String())
	}
	if msg := p.Stderr.String(); !strings.Contains(msg, `cancelled by "browser"`) || !strings.Contains(msg, `"user pressed stop"`) {
		t.Errorf("run's stderr %q, want the line naming the cancel's sender and reason", msg)
	}
	if _, _, held, err := db.Store(t).Lease(ctx, data.Key{Account: "acme", Session: "chat-1"}); err != nil || held {
		t.Errorf("the lease after the cancel: held %v (%v), want released", held, err)
	}
}

// TestRunIgnoresACancelUnlessAsked: a run without --on-cancel stop is not
// stopped by a cancel message: a stranger's cancel must not end a command
// that knows nothing of them (as asks to hand over are declined).
func TestRunIgnoresACancelUnlessAsked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	p := startRun(t, db.URL, "--account", "acme", "--session", "chat-1", "--ttl", "3s", "--", "sh", "-c", "echo started; sleep 60")
	pgtest.Eventually(t, 30*time.Second, "the command to start", func() bool { return strings.Contains(p.Stdout.String(), "started") })
	out, errOut, code := leasetop(ctx, db.URL, "send", "--account", "acme", "--session", "chat-1", "--cancel", "--wait", "acked", "--ttl", "1s")
	if code != cli.ExitMessageExpired {
		t.Fatalf("send --cancel to a run without --on-cancel stop: exit %d, want %d (expired unacknowledged): %s%s", code, cli.ExitMessageExpired, out, errOut)
	}
	if p.Exited() {
		t.Fatalf("the run exited on a cancel it was not asked to obey: %s", p.Stderr.String())
	}
}

// TestRunOnBusySteer: `run --on-busy steer` against a busy conversation
// sends its holder the message instead of running the command, and exits 0
// once the holder's run acknowledged it; on a free one it runs the command.
func TestRunOnBusySteer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	c, err := lease.New(s, lease.Config{TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	key := data.Key{Account: "acme", Session: "chat-1"}
	p, err := c.Authorize(ctx, allowAll, key, "desktop")
	if err != nil {
		t.Fatal(err)
	}
	l, err := c.Try(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	go func() {
		for m := range l.Messages() {
			got <- m.Body
			_ = m.Ack(ctx)
		}
	}()
	out, errOut, code := leasetopIn(ctx, db.URL, "also check May\n", "run", "--account", "acme", "--session", "chat-1", "--on-busy", "steer", "--", "false")
	if code != 0 || !strings.Contains(errOut, "acknowledged by run "+l.RunID().String()) {
		t.Fatalf("run --on-busy steer: exit %d: %s%s", code, out, errOut)
	}
	if body := <-got; body != "also check May" {
		t.Errorf("the holder got %q", body)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	free := startRun(t, db.URL, "--account", "acme", "--session", "chat-1", "--on-busy", "steer", "--message", "x", "--", "sh", "-c", "echo ran")
	if code := free.Wait(t, 30*time.Second); code != 0 || free.Stdout.String() != "ran\n" {
		t.Errorf("run --on-busy steer on a free conversation: exit %d, %q, want 0 and the command run: %s", code, free.Stdout.String(), free.Stderr.String())
	}
}

// TestSendOutcomes: each outcome of send is one line and its exit code: a
// resend with the same key is the same message (exit 0, nothing new), the
// key with another message exit 2, a message of two lines exit 2, a full
// share of the inbox exit 3, and --wait that outlives the message exit 9;
// --json says the same as one object.
func TestSendOutcomes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	dsn, _ := pgtest.Login(t, db, "lease_app")
	base := []string{"send", "--account", "acme", "--session", "chat-1"}
	with := func(args ...string) []string { return append(slices.Clone(base), args...) }
	out, errOut, code := leasetop(ctx, dsn, with("--key", "k1", "check March")...)
	if code != 0 || !strings.HasPrefix(out, `sent steer 1 to acme/chat-1 (key "k1"): waiting for a run`) {
		t.Fatalf("send: exit %d: %q %s", code, out, errOut)
	}
	out, _, code = leasetop(ctx, dsn, with("--key", "k1", "--json", "check March")...)
	var j struct {
		ID      int64  `json:"id"`
		Key     string `json:"key"`
		State   string `json:"state"`
		Created bool   `json:"created"`
	}
	if err := json.Unmarshal([]byte(out), &j); code != 0 || err != nil || j.ID != 1 || j.Key != "k1" || j.State != "waiting" || j.Created {
		t.Errorf("the resend --json: exit %d, %+v (%v) from %q, want message 1, not created", code, j, err, out)
	}
	for _, tt := range []struct {
		name  string
		stdin string
		args  []string
		code  int
		says  string
	}{
		{"key reused", "", with("--key", "k1", "check April"), cli.ExitUsage, "names message 1 already"},
		{"two lines", "one\ntwo\n", with("-"), cli.ExitUsage, "more than one line"},
		{"no message", "", with(), cli.ExitUsage, "needs a MESSAGE"},
		{"bad wait", "", with("--wait", "read", "x"), cli.ExitUsage, "--wait must be delivered or acked"},
		{"bidi", "", with("a\u202eb"), cli.ExitUsage, "U+202E"},
		{"expired", "", with("--wait", "delivered", "--ttl", "300ms", "nobody reads this"), cli.ExitMessageExpired, "expired unacknowledged"},
	} {
		out, errOut, code := leasetopIn(ctx, dsn, tt.stdin, tt.args...)
		if code != tt.code || !strings.Contains(errOut, tt.says) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%s: exit %d, stderr %q (stdout %q), want exit %d and one line saying %q", tt.name, code, errOut, out, tt.code, tt.says)
		}
	}
	for i := range data.MessageShare - 1 { // one live already: check March (nobody reads this expired)
		if _, errOut, code := leasetop(ctx, dsn, with(fmt.Sprintf("fill %d", i))...); code != 0 {
			t.Fatalf("fill %d: exit %d: %s", i, code, errOut)
		}
	}
	if _, errOut, code := leasetop(ctx, dsn, with("one too many")...); code != cli.ExitBusy || !strings.Contains(errOut, "nothing was sent") {
		t.Errorf("a full share: exit %d, %q, want %d", code, errOut, cli.ExitBusy)
	}
}

// TestInboxOutsideARun: inbox without a run's token in its environment is
// a usage error of one line; with the token of a run that no longer holds
// the conversation it exits 4; with nothing waiting, 5.
func TestInboxOutsideARun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	if _, errOut, code := leasetop(ctx, db.URL, "inbox"); code != cli.ExitUsage || !strings.Contains(errOut, "leasetop run") {
		t.Errorf("inbox without a run: exit %d, %q, want %d", code, errOut, cli.ExitUsage)
	}
	key := data.Key{Account: "acme", Session: "chat-1"}
	run := uuid.New()
	g, err := db.Store(t).Acquire(ctx, key, run, time.Minute, "holder")
	if err != nil {
		t.Fatal(err)
	}
	tok := lease.Token{Key: key, RunID: run, Fence: g.Fence}
	inbox := func() (string, int) {
		var out, errOut syncbuf.Buffer
		env := map[string]string{"DATABASE_URL": db.URL}
		for _, kv := range tok.Env() {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
		err := cli.Run(ctx, cli.Env{Args: []string{"inbox"}, Getenv: func(k string) string { return env[k] },
			Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut})
		code := cli.Report(&errOut, err)
		return out.String() + errOut.String(), code
	}
	if out, code := inbox(); code != cli.ExitNothing {
		t.Errorf("inbox with nothing waiting: exit %d, %q, want %d", code, out, cli.ExitNothing)
	}
	if _, err := db.Store(t).Release(ctx, key, run); err != nil {
		t.Fatal(err)
	}
	if out, code := inbox(); code != cli.ExitLost || !strings.Contains(out, "no longer holds") {
		t.Errorf("inbox of a released run: exit %d, %q, want %d", code, out, cli.ExitLost)
	}
}

// TestFollowPrintsEachOwner: follow prints the conversation's owner, then
// each change of owner as JSON lines: a run, its release, the next run
// with its attachment.
func TestFollowPrintsEachOwner(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	readerDSN, _ := pgtest.Login(t, db, "lease_reader")
	var out, errOut syncbuf.Buffer
	done := make(chan int, 1)
	go func() {
		done <- cli.Report(&errOut, run(ctx, readerDSN, &out, &errOut, "follow", "--account", "acme", "--session", "chat-1"))
	}()
	lines := func(n int) []map[string]any {
		t.Helper()
		var got []map[string]any
		pgtest.Eventually(t, 30*time.Second, fmt.Sprintf("%d lines of follow", n), func() bool {
			got = nil
			for l := range strings.SplitSeq(strings.TrimSpace(out.String()), "\n") {
				var m map[string]any
				if json.Unmarshal([]byte(l), &m) == nil {
					got = append(got, m)
				}
			}
			return len(got) >= n
		})
		return got
	}
	if got := lines(1); got[0]["state"] != "free" {
		t.Fatalf("follow's first line %v, want free", got[0])
	}
	s := db.Store(t)
	key := data.Key{Account: "acme", Session: "chat-1"}
	a := uuid.New()
	if _, err := s.Acquire(ctx, key, a, time.Minute, "desktop"); err != nil {
		t.Fatal(err)
	}
	lines(2)
	if _, err := s.Release(ctx, key, a); err != nil {
		t.Fatal(err)
	}
	lines(3)
	b := uuid.New()
	if _, err := s.AcquireWith(ctx, key, b, time.Minute, "phone", data.AcquireOptions{Attachment: "stream-9"}); err != nil {
		t.Fatal(err)
	}
	got := lines(4)
	want := []struct{ state, run, kind, attachment any }{
		{"free", nil, nil, nil},
		{"held", data.PublicRunID(a).String(), "acquired", nil},
		{"free", data.PublicRunID(a).String(), "released", nil},
		{"held", data.PublicRunID(b).String(), "acquired", "stream-9"},
	}
	for i, w := range want {
		g := got[i]
		if g["state"] != w.state || g["run_id"] != w.run || g["event_kind"] != w.kind || g["attachment"] != w.attachment {
			t.Errorf("line %d: %v, want state %v run %v kind %v attachment %v", i, g, w.state, w.run, w.kind, w.attachment)
		}
	}
	cancel()
	<-done
}
