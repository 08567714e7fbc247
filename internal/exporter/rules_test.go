package exporter_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// alertsFile is the shipped alert rules, relative to this package.
var (
	alertsFile     = filepath.Join("..", "..", "docs", "alerts.yml")
	alertsTestFile = filepath.Join("..", "..", "docs", "alerts_test.yml")
)

// promBinary finds a Prometheus binary, failing t with how to install it.
func promBinary(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s not found on PATH: install it (Debian/Ubuntu: apt-get install prometheus)", name)
	}
	return p
}

// TestAlertRules checks docs/alerts.yml with promtool and runs its unit
// tests (docs/alerts_test.yml: every alert fires where it should and stays
// silent where it should not).
func TestAlertRules(t *testing.T) {
	t.Parallel()
	promtool := promBinary(t, "promtool")
	for _, args := range [][]string{
		{"check", "rules", alertsFile},
		{"test", "rules", alertsTestFile},
	} {
		out, err := exec.Command(promtool, args...).CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	tests, err := os.ReadFile(alertsTestFile)
	if err != nil {
		t.Fatal(err)
	}
	names := alertNames(t)
	if len(names) != 8 {
		t.Errorf("%s has %d alerts, want 8 (expired unclaimed, zombies, forced release, feed down, event lag, NOTIFY queue, inbox message waiting, account saturated)", alertsFile, len(names))
	}
	for _, n := range names {
		if !strings.Contains(string(tests), "alertname: "+n+"\n") {
			t.Errorf("alert %s has no unit test in %s", n, alertsTestFile)
		}
	}
}

// alertNames is the names of docs/alerts.yml's alerts, in its order.
func alertNames(t *testing.T) []string {
	t.Helper()
	rules, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^\s*- alert: (\S+)`).FindAllStringSubmatch(string(rules), -1) {
		names = append(names, m[1])
	}
	return names
}
