package supervise_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/internal/testkit/proctest"
)

// spawnTree is sh code (for sh -c, with $D a folder) that leaves processes
// behind every way a command can, all ignoring SIGTERM, and writes their pids
// to files in $D: group, a background child in the command's process group;
// orphan, a grandchild whose parent exited; escaped, a process in a session
// of its own (setsid), out of the group; and command, the command itself.
// They do not hold leasetop's stdout and stderr, so that a test waiting for
// leasetop is not held up by the ones a bug leaves running.
const spawnTree = `trap "" TERM
exec </dev/null >/dev/null 2>&1
sleep 600 & echo $! > "$D/group"
sh -c 'sleep 600 & echo $! > "$D/orphan"'
setsid sh -c 'echo $$ > "$D/escaped"; exec sleep 600' &
echo $$ > "$D/command"
`

// treeNames are the files spawnTree writes.
var treeNames = []string{"command", "group", "orphan", "escaped"}

// readTree waits until spawnTree wrote every pid into dir and returns the
// processes, each named by pid and start time.
func readTree(t *testing.T, dir string, p *proctest.Process) []proctest.Proc {
	t.Helper()
	var tree []proctest.Proc
	pgtest.Eventually(t, 30*time.Second, "the command to write its tree's pids", func() bool {
		if p.Exited() {
			t.Fatalf("leasetop exited %d before the command's tree ran; stderr: %s", p.Code(), p.Stderr.String())
		}
		tree = tree[:0]
		for _, name := range treeNames {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil || !strings.HasSuffix(string(b), "\n") {
				return false
			}
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatalf("%s: %q is not a pid", name, b)
			}
			pr, ok := proctest.ReadProc(pid)
			if !ok {
				t.Fatalf("%s (pid %d) is not running", name, pid)
			}
			tree = append(tree, pr)
		}
		return true
	})
	t.Cleanup(func() { // what a failing test found running
		for _, p := range tree {
			if p.Alive() {
				_ = syscall.Kill(p.PID, syscall.SIGKILL)
			}
		}
	})
	return tree
}

// alive is the processes of tree still running, by name.
func alive(tree []proctest.Proc) []string {
	var out []string
	for i, p := range tree {
		if p.Alive() {
			out = append(out, fmt.Sprintf("%s (pid %d)", treeNames[i], p.PID))
		}
	}
	return out
}

// treeCheck is sh code for the next owner's command: it writes to
// $D/check, as it starts, every process of the tree listed in $D/tree (pid
// and start time a line) that is still running, then "checked".
const treeCheck = `while read pid start; do
	if set -- $(cat /proc/$pid/stat 2>/dev/null) && [ $# -ge 22 ] && [ "$3" != Z ] && [ "${22}" = "$start" ]; then
		echo "alive $pid"
	fi
done < "$D/tree" > "$D/check.tmp"
echo checked >> "$D/check.tmp"
mv "$D/check.tmp" "$D/check"
`

// kill -9 of leasetop run: no process of its command's tree is left, not
// the child that ignores SIGTERM, the orphan or the one in its own session,
// and the next owner's command starts only after the last of them ended:
// it checks, as it starts, that none runs. Before the guardian, the
// kernel's parent-death signal killed only the command, and the rest ran
// on beside the next owner.
func TestKill9StopsTheCommandsTree(t *testing.T) {
	e := newEnv(t)
	e.dumpOnFailure(t)
	dir := t.TempDir()
	env := []string{"D=" + dir}
	first := e.leasetopEnv(t, env, "run", "--account", testKey.Account, "--session", testKey.Session, "--ttl", "2s",
		"--", "sh", "-c", spawnTree+"while :; do sleep 1; done")
	tree := readTree(t, dir, first)
	var list strings.Builder
	for _, p := range tree {
		fmt.Fprintf(&list, "%d %d\n", p.PID, p.Start)
	}
	if err := os.WriteFile(filepath.Join(dir, "tree"), []byte(list.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	second := e.leasetopEnv(t, env, "run", "--account", testKey.Account, "--session", testKey.Session, "--ttl", "2s", "--wait",
		"--", "sh", "-c", treeCheck)
	pgtest.Eventually(t, 30*time.Second, "the second run to wait", func() bool { return strings.Contains(second.Stderr.String(), "waiting") })

	first.Signal(t, syscall.SIGKILL)
	killed := time.Now()
	if got := first.Wait(t, 30*time.Second); got != 128+9 {
		t.Fatalf("killed run's exit = %d, want 137", got)
	}
	pgtest.Eventually(t, 30*time.Second, "the killed run's tree to be gone", func() bool { return len(alive(tree)) == 0 })
	t.Logf("the tree was gone %s after kill -9", time.Since(killed).Round(time.Millisecond))

	if got := second.Wait(t, 60*time.Second); got != 0 {
		t.Fatalf("second run exit = %d, want 0; stderr: %s", got, second.Stderr.String())
	}
	check, err := os.ReadFile(filepath.Join(dir, "check"))
	if err != nil {
		t.Fatalf("the second run's command left no check: %v", err)
	}
	if got := string(check); got != "checked\n" {
		t.Errorf("as the second run's command started: %q, want none of the first tree running", got)
	}
	over, ok := findEvent(e.events(t), func(ev data.Event) bool { return ev.Kind == data.KindTakenOver })
	if !ok || over.At.Before(over.PrevExpiresAt) {
		t.Errorf("takeover %+v (found %v), want one after the killed run's expiry", over, ok)
	}
}

// When leasetop run exits with its command, by itself or stopped by SIGTERM
// or SIGINT (forwarded: the command exits 42), nothing of the command's
// tree is left by the time leasetop has exited, the process in its own
// session included, and neither is the guardian.
func TestRunExitLeavesNoTree(t *testing.T) {
	e := newEnv(t)
	for _, tt := range []struct {
		name string
		sig  syscall.Signal
		want int
	}{{"exit", 0, 0}, {"SIGTERM", syscall.SIGTERM, 42}, {"SIGINT", syscall.SIGINT, 42}} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			script := spawnTree + `trap "exit 42" TERM INT
echo $PPID > "$D/guardian"
while [ ! -e "$D/exit" ]; do sleep 0.02; done`
			p := e.leasetopEnv(t, []string{"D=" + dir}, "run", "--account", testKey.Account, "--session", testKey.Session, "--", "sh", "-c", script)
			tree := readTree(t, dir, p)
			var guardian proctest.Proc
			pgtest.Eventually(t, 30*time.Second, "the command to write its parent's pid", func() bool {
				b, err := os.ReadFile(filepath.Join(dir, "guardian"))
				if err != nil || !strings.HasSuffix(string(b), "\n") {
					return false
				}
				pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
				if err != nil {
					t.Fatalf("guardian: %q is not a pid", b)
				}
				var ok bool
				if guardian, ok = proctest.ReadProc(pid); !ok {
					t.Fatalf("the command's parent (pid %d) is not running", pid)
				}
				return true
			})
			if tt.sig != 0 {
				p.Signal(t, tt.sig)
			} else if err := os.WriteFile(filepath.Join(dir, "exit"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if got := p.Wait(t, 30*time.Second); got != tt.want {
				t.Fatalf("exit = %d, want %d; stderr: %s", got, tt.want, p.Stderr.String())
			}
			if left := alive(tree); len(left) != 0 {
				t.Errorf("after leasetop exited: %s still running", strings.Join(left, ", "))
			}
			if guardian.Alive() {
				t.Errorf("after leasetop exited: the guardian (pid %d) still running", guardian.PID)
			}
		})
	}
}

// The guardian between leasetop run and its command: the command's parent,
// leasetop's child, without the database secrets in its environment (even
// with --pass-db-env, which passes them to the command) and with /dev/null
// as stdin, stdout and stderr once the command runs.
func TestRunGuardian(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	// The command waits (up to 30 s) for the guardian to let go of its
	// output, then describes it.
	script := `g=$PPID
i=0
while [ "$(readlink /proc/$g/fd/1)" != /dev/null ] && [ $i -lt 3000 ]; do sleep 0.01; i=$((i+1)); done
tr '\0' ' ' < /proc/$g/cmdline > "$D/cmdline"
tr '\0' '\n' < /proc/$g/environ > "$D/environ"
for fd in 0 1 2; do readlink /proc/$g/fd/$fd; done > "$D/fds"
echo "$PGPASSWORD" > "$D/command-pgpassword"
echo $g > "$D/guardian"`
	p := e.leasetopEnv(t, []string{"D=" + dir, "PGPASSWORD=hunter2"}, "run", "--pass-db-env",
		"--account", testKey.Account, "--session", testKey.Session, "--", "sh", "-c", script)
	if got := p.Wait(t, 60*time.Second); got != 0 {
		t.Fatalf("exit = %d; stderr: %s", got, p.Stderr.String())
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("the command wrote no %s: %v", name, err)
		}
		return string(b)
	}
	if got, want := read("cmdline"), "leasetop run-guardian "; got != want {
		t.Errorf("the command's parent is %q, want %q", got, want)
	}
	environ := strings.Split(read("environ"), "\n")
	for _, kv := range environ {
		if name, _, _ := strings.Cut(kv, "="); name == "DATABASE_URL" || name == "PGPASSWORD" {
			t.Errorf("the guardian's environment has %s", name)
		}
	}
	if !slices.Contains(environ, "D="+dir) {
		t.Errorf("the guardian's environment lacks leasetop's own (D=...): %q", environ)
	}
	if got := read("command-pgpassword"); got != "hunter2\n" {
		t.Errorf("with --pass-db-env the command's PGPASSWORD = %q, want hunter2", got)
	}
	if got, want := read("fds"), "/dev/null\n/dev/null\n/dev/null\n"; got != want {
		t.Errorf("the guardian's stdin, stdout, stderr = %q, want %q", got, want)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(read("guardian")))
	if !proctest.ProcessGone(pid) {
		t.Errorf("the guardian (pid %d) is still there after leasetop exited", pid)
	}
}
