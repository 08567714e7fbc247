package cli_test

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// TestVersionIsTheBinarysStamp: leasetop version reports what the go
// command stamped into the binary it runs in (go version -m reads the same
// stamp): the module version and, when the build had a VCS, the commit and
// whether the tree was modified.
func TestVersionIsTheBinarysStamp(t *testing.T) {
	out, err := exec.Command("go", "version", "-m", builtBinary(t)).Output()
	if err != nil {
		t.Fatalf("go version -m: %v", err)
	}
	want := map[string]string{}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		switch {
		case len(f) >= 3 && f[0] == "mod":
			want["version"] = f[2]
		case len(f) == 2 && f[0] == "build":
			if k, v, ok := strings.Cut(f[1], "="); ok {
				want[k] = v
			}
		}
	}
	got, err := exec.Command(builtBinary(t), "version", "--json").Output()
	if err != nil {
		t.Fatalf("leasetop version --json: %v", err)
	}
	var v struct {
		Leasetop struct {
			Version, Commit string
			Modified        bool
		}
	}
	if err := json.Unmarshal(got, &v); err != nil {
		t.Fatalf("leasetop version --json printed %q: %v", got, err)
	}
	if v.Leasetop.Version != want["version"] || v.Leasetop.Commit != want["vcs.revision"] || v.Leasetop.Modified != (want["vcs.modified"] == "true") {
		t.Errorf("leasetop version = %+v, want version %q, commit %q, modified %q (go version -m)",
			v.Leasetop, want["version"], want["vcs.revision"], want["vcs.modified"])
	}
	t.Logf("stamp: %v", want)
}
