package cli

import (
	"runtime"
	"runtime/debug"
	"testing"
)

// TestBuildFrom: the go command's stamp (module version, VCS settings)
// becomes the version line, and a binary without one still says something.
func TestBuildFrom(t *testing.T) {
	tests := []struct {
		name        string
		bi          *debug.BuildInfo
		short, long string
	}{
		{"tagged", &debug.BuildInfo{GoVersion: "go1.26.7", Main: debug.Module{Version: "v1.4.0"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "1a2b3c4d5e6f7a8b9c0d1a2b3c4d5e6f7a8b9c0d"}, {Key: "vcs.time", Value: "2026-10-08T12:00:00Z"}, {Key: "vcs.modified", Value: "false"},
		}}, "v1.4.0 (commit 1a2b3c4d5e6f)", "v1.4.0 (commit 1a2b3c4d5e6f, 2026-10-08T12:00:00Z, go1.26.7 " + runtime.GOOS + "/" + runtime.GOARCH + ")"},
		{"work tree with changes", &debug.BuildInfo{GoVersion: "go1.26.7", Main: debug.Module{Version: "v0.0.0-20261008120000-1a2b3c4d5e6f+dirty"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "1a2b3c4d5e6f7a8b"}, {Key: "vcs.modified", Value: "true"},
		}}, "v0.0.0-20261008120000-1a2b3c4d5e6f+dirty (commit 1a2b3c4d5e6f, modified)", "v0.0.0-20261008120000-1a2b3c4d5e6f+dirty (commit 1a2b3c4d5e6f, modified, go1.26.7 " + runtime.GOOS + "/" + runtime.GOARCH + ")"},
		{"no VCS", &debug.BuildInfo{GoVersion: "go1.26.7", Main: debug.Module{Version: "(devel)"}}, "(devel)", "(devel) (go1.26.7 " + runtime.GOOS + "/" + runtime.GOARCH + ")"},
		{"no build information", nil, "(unknown)", "(unknown) (" + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + ")"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := buildFrom(tt.bi)
			if got := b.short(); got != tt.short {
				t.Errorf("short() = %q, want %q", got, tt.short)
			}
			if got := b.long(); got != tt.long {
				t.Errorf("long() = %q, want %q", got, tt.long)
			}
		})
	}
}
