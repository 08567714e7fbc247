package demo

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/leasetop/leasetop/internal/pgserver"
)

// TestRemoveLeftoversRemovesOnlyDeadDemosFolders builds folders as demos
// leave them and checks that RemoveLeftovers removes exactly those it can
// prove belong to a demo that is gone: the process is gone, its pid was
// reused by another process, or it ran in another boot; and never a live
// demo's, one without a valid owner file, a link, another prefix, or one
// whose postmaster still runs. (A real kill -9: TestKilledDemosFolderIsRemovedByTheNext.)
func TestRemoveLeftoversRemovesOnlyDeadDemosFolders(t *testing.T) {
	me, err := self()
	if err != nil {
		t.Fatal(err)
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	deadPID := dead.Process.Pid // reaped: no process has it now, or another one with another start time
	ownerText := func(o owner) string { return fmt.Sprintf("%d %d %s\n", o.pid, o.start, o.boot) }

	tests := []struct {
		name        string
		make        func(t *testing.T, dir string)
		wantRemoved bool
	}{
		{"demo process gone", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, ownerFile), ownerText(owner{pid: deadPID, start: me.start, boot: me.boot}))
		}, true},
		{"pid reused by another process", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, ownerFile), ownerText(owner{pid: me.pid, start: me.start + 1, boot: me.boot}))
		}, true},
		{"another boot", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, ownerFile), ownerText(owner{pid: me.pid, start: me.start, boot: "00000000-0000-0000-0000-000000000000"}))
		}, true},
		{"demo still running", func(t *testing.T, dir string) {
			if err := claim(dir); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"no owner file (a test's server)", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "data", "PG_VERSION"), "15\n")
		}, false},
		{"owner file not parsable", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, ownerFile), "12 soon\n")
		}, false},
		{"owner file is a link", func(t *testing.T, dir string) {
			target := filepath.Join(t.TempDir(), "owner")
			write(t, target, ownerText(owner{pid: deadPID, start: me.start, boot: me.boot}))
			if err := os.Symlink(target, filepath.Join(dir, ownerFile)); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"postmaster still running", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, ownerFile), ownerText(owner{pid: deadPID, start: me.start, boot: me.boot}))
			write(t, filepath.Join(dir, "data", "postmaster.pid"), strconv.Itoa(me.pid)+"\n/data\n")
		}, false},
		{"postmaster stopped without removing its pid file", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, ownerFile), ownerText(owner{pid: deadPID, start: me.start, boot: me.boot}))
			write(t, filepath.Join(dir, "data", "postmaster.pid"), strconv.Itoa(deadPID)+"\n/data\n")
		}, true},
	}
	if os.Geteuid() == 0 { // only root can give a file to another user
		tests = append(tests, struct {
			name        string
			make        func(t *testing.T, dir string)
			wantRemoved bool
		}{"owner file of another user", func(t *testing.T, dir string) {
			path := filepath.Join(dir, ownerFile)
			write(t, path, ownerText(owner{pid: deadPID, start: me.start, boot: me.boot}))
			if err := os.Chown(path, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}, false})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmp := t.TempDir()
			dir := filepath.Join(tmp, pgserver.DirPrefix+"x")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			tt.make(t, dir)
			removed := RemoveLeftovers(tmp)
			_, err := os.Stat(dir)
			if gone := os.IsNotExist(err); gone != tt.wantRemoved || (len(removed) == 1) != tt.wantRemoved {
				t.Errorf("RemoveLeftovers removed %v (folder gone: %v), want removed: %v", removed, gone, tt.wantRemoved)
			}
		})
	}

	t.Run("links and other prefixes", func(t *testing.T) {
		tmp := t.TempDir()
		elsewhere := filepath.Join(t.TempDir(), pgserver.DirPrefix+"target")
		write(t, filepath.Join(elsewhere, ownerFile), ownerText(owner{pid: deadPID, start: me.start, boot: me.boot}))
		if err := os.Symlink(elsewhere, filepath.Join(tmp, pgserver.DirPrefix+"link")); err != nil {
			t.Fatal(err)
		}
		other := filepath.Join(tmp, "other-"+pgserver.DirPrefix+"x")
		write(t, filepath.Join(other, ownerFile), ownerText(owner{pid: deadPID, start: me.start, boot: me.boot}))
		if removed := RemoveLeftovers(tmp); len(removed) != 0 {
			t.Errorf("RemoveLeftovers removed %v, want nothing (a link, another prefix)", removed)
		}
		for _, p := range []string{elsewhere, other} {
			if _, err := os.Stat(p); err != nil {
				t.Errorf("%s: %v, want it kept", p, err)
			}
		}
	})
}

// write writes text to path, making its folders.
func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}
