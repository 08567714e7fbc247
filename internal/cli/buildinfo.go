package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// buildInfo is what the binary knows of how it was built: the module
// version the go command stamped, the VCS commit, and the toolchain.
type buildInfo struct {
	Version    string `json:"version"`               // a tag, a pseudo-version, or "(devel)"
	Commit     string `json:"commit,omitempty"`      // vcs.revision
	CommitTime string `json:"commit_time,omitempty"` // vcs.time, RFC 3339
	Modified   bool   `json:"modified,omitempty"`    // built from a work tree with changes
	Go         string `json:"go"`
	Platform   string `json:"platform"`
}

// readBuild reads the running binary's build information.
func readBuild() buildInfo {
	bi, _ := debug.ReadBuildInfo()
	return buildFrom(bi)
}

// buildFrom turns the go command's stamp into a buildInfo; a nil bi (a
// binary built without module support) gives "(unknown)".
func buildFrom(bi *debug.BuildInfo) buildInfo {
	b := buildInfo{Version: "(unknown)", Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi == nil {
		return b
	}
	if bi.Main.Version != "" {
		b.Version = bi.Main.Version
	}
	if bi.GoVersion != "" {
		b.Go = bi.GoVersion
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Commit = s.Value
		case "vcs.time":
			b.CommitTime = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

// short is the version and commit in a few words, for one-line messages:
// "v1.4.0 (commit 1a2b3c4d5e6f)".
func (b buildInfo) short() string {
	var parts []string
	if b.Commit != "" {
		parts = append(parts, "commit "+abbrev(b.Commit))
	}
	if b.Modified {
		parts = append(parts, "modified")
	}
	if len(parts) == 0 {
		return b.Version
	}
	return fmt.Sprintf("%s (%s)", b.Version, strings.Join(parts, ", "))
}

// long is short with the commit's time and the toolchain.
func (b buildInfo) long() string {
	var parts []string
	if b.Commit != "" {
		parts = append(parts, "commit "+abbrev(b.Commit))
	}
	if b.CommitTime != "" {
		parts = append(parts, b.CommitTime)
	}
	if b.Modified {
		parts = append(parts, "modified")
	}
	parts = append(parts, b.Go+" "+b.Platform)
	return fmt.Sprintf("%s (%s)", b.Version, strings.Join(parts, ", "))
}

// abbrev shortens a commit hash to 12 digits, as git's short form does in a
// large repository.
func abbrev(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}
