package supervise_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// TestRunResolvesTheCommandFirst: a command leasetop run cannot start (not
// found, not executable, a directory) is found out before it touches the
// database: exit 127 or 126 with one line, and not one event written,
// whether the session is free (no acquired/released pair) or busy and the
// run would preempt, ask or queue (the holder keeps its lease, fence and
// all).
func TestRunResolvesTheCommandFirst(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	plain := filepath.Join(dir, "worker.sh")
	if err := os.WriteFile(plain, []byte("#!/bin/sh\necho ran\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	typo := filepath.Join(dir, "wokrer.sh")
	tests := []struct {
		name   string
		busy   []string // --on-busy ...; nil: the session is free
		argv0  string
		want   int
		reason string
	}{
		{"free, not found", nil, typo, 127, "no such file"},
		{"free, not found in PATH", nil, "leasetop-no-such-command", 127, "not found"},
		{"free, not executable", nil, plain, 126, "permission denied"},
		{"free, a directory", nil, dir, 126, "directory"},
		{"preempt, not found", []string{"--on-busy", "preempt", "--reason", "typo"}, typo, 127, "no such file"},
		{"ask, not found", []string{"--on-busy", "ask"}, typo, 127, "no such file"},
		{"queue, not executable", []string{"--on-busy", "queue"}, plain, 126, "permission denied"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var holder uuid.UUID
			if tc.busy != nil {
				holder = uuid.New()
				if _, err := e.store.Acquire(t.Context(), testKey, holder, time.Minute, "desktop"); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _, _ = e.store.Release(context.Background(), testKey, holder) })
			}
			before := e.events(t)
			h := e.holder(t)
			args := append(append([]string{"run", "--account", testKey.Account, "--session", testKey.Session}, tc.busy...), "--", tc.argv0, "arg")
			p := e.leasetop(t, args...)
			if got := p.Wait(t, 30*time.Second); got != tc.want {
				t.Errorf("exit = %d, want %d; stderr %q", got, tc.want, p.Stderr.String())
			}
			stderr := p.Stderr.String()
			if strings.Count(stderr, "\n") != 1 || !strings.Contains(strings.ToLower(stderr), tc.reason) || !strings.Contains(stderr, "nothing was run") {
				t.Errorf("stderr = %q, want one line saying %q and that nothing was run", stderr, tc.reason)
			}
			if after := e.events(t); len(after) != len(before) {
				var kinds []string
				for _, ev := range after[len(before):] {
					kinds = append(kinds, string(ev.Kind))
				}
				t.Errorf("leasetop run wrote %v for a command it could not start", kinds)
			}
			if got := e.holder(t); got.RunID != h.RunID || got.Fence != h.Fence {
				t.Errorf("the lease is %v fence %d after the refusal, want %v fence %d as before", got.RunID, got.Fence, h.RunID, h.Fence)
			}
		})
	}
}
