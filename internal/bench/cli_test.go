package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/leasetop/leasetop/internal/bench"
	"github.com/leasetop/leasetop/internal/cli"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// runBench runs `leasetop bench args...` with an empty environment.
func runBench(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := cli.Run(context.Background(), cli.Env{
		Args: append([]string{"bench"}, args...), Getenv: func(string) string { return "" },
		Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut,
	})
	code = cli.Report(&errOut, err)
	return out.String(), errOut.String(), code
}

func TestCommandJSON(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	stdout, stderr, code := runBench(t, "--dsn", db.URL, "--clients", "2", "--keys", "4",
		"--duration", "100ms", "--warmup", "0s", "--only", "select1,upsert,acquire", "--json")
	if code != cli.ExitOK {
		t.Fatalf("exit %d, want 0; stderr:\n%s", code, stderr)
	}
	var rep bench.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("stdout is not a JSON report: %v\n%s", err, stdout)
	}
	var names []string
	for _, r := range rep.Results {
		names = append(names, r.Name)
		if r.Ops == 0 || r.Error != "" {
			t.Errorf("%s: ops %d, error %q; want ops > 0 and no error", r.Name, r.Ops, r.Error)
		}
	}
	if got, want := strings.Join(names, ","), "select1,upsert,acquire"; got != want {
		t.Errorf("results %s, want %s", got, want)
	}
	if len(rep.Ratios) == 0 || rep.Ratios[0].Name != "acquire p50 / plain UPSERT p50" || rep.Ratios[0].Met == nil {
		t.Errorf("first ratio = %+v, want the acquire target with a verdict", rep.Ratios)
	}
	if rep.Machine.PostgresVersion == "" || rep.Machine.Fsync == "" || rep.Machine.Cores == 0 {
		t.Errorf("machine = %+v, want cores, PostgreSQL version and fsync", rep.Machine)
	}
	if rep.Settings.Clients != 2 || rep.Settings.Keys != 4 {
		t.Errorf("settings = %+v, want 2 clients, 4 keys", rep.Settings)
	}
	assertCleanedUp(t, db.Conn(t))
}

// TestCommandEmbedded runs bench without --dsn: it must start its own server
// with fsync on and say so.
func TestCommandEmbedded(t *testing.T) {
	t.Parallel()
	stdout, stderr, code := runBench(t, "--clients", "1", "--keys", "1", "--duration", "50ms", "--warmup", "0s", "--only", "select1")
	if code != cli.ExitOK {
		t.Fatalf("exit %d, want 0; stderr:\n%s", code, stderr)
	}
	for _, want := range []string{"embedded throwaway server", "fsync=on", "synchronous_commit=on", "select1"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("report lacks %q:\n%s", want, stdout)
		}
	}
}

func TestCommandBadInput(t *testing.T) {
	t.Parallel()
	schemaless := pgtest.NewEmpty(t)
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"zero clients", []string{"--clients", "0"}, cli.ExitUsage, "--clients must be at least 1"},
		{"too many clients", []string{"--clients", "100000"}, cli.ExitUsage, "--clients must be between 1 and 256"},
		{"fewer keys than clients", []string{"--clients", "4", "--keys", "2"}, cli.ExitUsage, "--keys must be between"},
		{"negative duration", []string{"--duration", "-1s"}, cli.ExitUsage, "--duration must be positive"},
		{"unknown workload", []string{"--only", "acquire,\x1b[31mevil"}, cli.ExitUsage, `unknown workload "\x1b[31mevil"`},
		{"argument", []string{"now"}, cli.ExitUsage, `bench takes no arguments, got "now"`},
		{"bad flag", []string{"--nope"}, cli.ExitUsage, "flag provided but not defined"},
		{"bad url", []string{"--dsn", "postgres://u:hunter2@[::1"}, cli.ExitUsage, "invalid database URL"},
		{"no schema", []string{"--dsn", schemaless.URL, "--only", "select1"}, cli.ExitSchema, "leasetop migrate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := runBench(t, tt.args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tt.code, stderr)
			}
			if !strings.Contains(stderr, tt.want) {
				t.Errorf("stderr = %q, want it to contain %q", stderr, tt.want)
			}
			if strings.Contains(stderr, "hunter2") {
				t.Errorf("stderr shows the password: %q", stderr)
			}
			if strings.Contains(stderr, "\x1b") {
				t.Errorf("stderr carries a raw escape: %q", stderr)
			}
			if stdout != "" {
				t.Errorf("stdout = %q, want nothing", stdout)
			}
		})
	}
}

// TestCommandJSONWithLoad: a workload that loads leases in bulk (monitor)
// reports its load on stderr as plain lines, stderr not being a terminal (no
// status line redrawn in place, no colour), and its summary; stdout holds
// the JSON report and nothing else.
func TestCommandJSONWithLoad(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	stdout, stderr, code := runBench(t, "--dsn", db.URL, "--only", "monitor", "--monitor-leases", "20000",
		"--duration", "100ms", "--warmup", "0s", "--json")
	if code != cli.ExitOK {
		t.Fatalf("exit %d, want 0; stderr:\n%s", code, stderr)
	}
	var rep bench.Report
	dec := json.NewDecoder(strings.NewReader(stdout))
	if err := dec.Decode(&rep); err != nil || dec.More() {
		t.Fatalf("stdout is not one JSON report (%v):\n%s", err, stdout)
	}
	if !regexp.MustCompile(`(?m)^bench: monitor: wrote leases 2,001-20,000 in [\d.]+s \([\d,]+/s\)$`).MatchString(stderr) {
		t.Errorf("stderr lacks the load's summary line:\n%s", stderr)
	}
	if strings.ContainsAny(stderr, "\r\x1b") {
		t.Errorf("stderr (not a terminal) carries a carriage return or an escape: %q", stderr)
	}
	assertCleanedUp(t, db.Conn(t))
}

// TestCommandPlot: bench --plot DIR writes an SVG for each figure whose
// workloads ran: each parses as XML, is an <svg>, and carries its title
// and axis labels as text. A figure whose workloads did not run is named on
// stderr with what to run; stdout is the report alone.
func TestCommandPlot(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	dir := filepath.Join(t.TempDir(), "plots") // made by bench
	stdout, stderr, code := runBench(t, "--dsn", db.URL, "--clients", "2", "--keys", "4", "--duration", "200ms", "--warmup", "0s",
		"--only", "handoff,keepalive,monitor", "--monitor-leases", "2000", "--plot", dir, "--json")
	if code != cli.ExitOK {
		t.Fatalf("exit %d, want 0; stderr:\n%s", code, stderr)
	}
	if err := json.Unmarshal([]byte(stdout), new(bench.Report)); err != nil {
		t.Errorf("stdout is not the JSON report alone: %v", err)
	}
	want := map[string][]string{
		"handoff.svg":   {"Handoff latency: leasetop's waiter against polling", "release → the waiter holds the lease (ms, log scale)", "share of handoffs at or below", "leasetop (LISTEN/NOTIFY)", "polling every second"},
		"keepalive.svg": {"Keeping leases alive: the server's CPU per lease renewed", "leases renewed per call (log scale)", "server CPU per renewal (µs, log scale)"},
		"monitor.svg":   {"The monitor's first picture of every lease", "The Go heap it holds then", "live leases (log scale)", "seconds, log scale", "MB, log scale"},
		"seed.svg":      {"Against the seed's SQL, in the same run", "latency (ms)", "cycle p50", "the seed's SQL", "leasetop"},
	}
	for file, texts := range want {
		if file == "seed.svg" {
			continue // its workloads did not run: below
		}
		path := filepath.Join(dir, file)
		if !strings.Contains(stderr, "bench: wrote "+path+"\n") {
			t.Errorf("stderr does not say it wrote %s:\n%s", path, stderr)
		}
		checkSVG(t, path, texts)
	}
	if !strings.Contains(stderr, "bench: no seed.svg: run --only seed-cycle,cycle,seed-renew,renew\n") {
		t.Errorf("stderr does not say what seed.svg needs:\n%s", stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "seed.svg")); err == nil {
		t.Errorf("seed.svg was written without its workloads")
	}
	// The seed's figure, from a run of its workloads.
	_, stderr, code = runBench(t, "--dsn", db.URL, "--clients", "2", "--keys", "4", "--duration", "200ms", "--warmup", "0s",
		"--only", "seed-cycle,cycle,seed-renew,renew", "--plot", dir)
	if code != cli.ExitOK {
		t.Fatalf("exit %d, want 0; stderr:\n%s", code, stderr)
	}
	checkSVG(t, filepath.Join(dir, "seed.svg"), append(want["seed.svg"], "renewal p99"))
	assertCleanedUp(t, db.Conn(t))
}

// TestCommandPlotBadDir: --plot naming a file, not a folder, is one line and
// exit 2 before anything runs.
func TestCommandPlotBadDir(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runBench(t, "--dsn", "postgres://nobody@127.0.0.1:1/none", "--plot", file)
	if code != cli.ExitUsage || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "--plot: mkdir "+file+": not a directory") || stdout != "" {
		t.Errorf("exit %d, stdout %q, stderr %q; want 2 and one line about --plot", code, stdout, stderr)
	}
}

// checkSVG parses path as XML: an <svg> document whose text elements hold
// every one of texts.
func checkSVG(t *testing.T, path string, texts []string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := xml.NewDecoder(f)
	var root string
	var shown []string
	inText := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s is not XML: %v", path, err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = tok.Name.Local
			}
			if tok.Name.Local == "text" {
				inText++
			}
		case xml.EndElement:
			if tok.Name.Local == "text" {
				inText--
			}
		case xml.CharData:
			if inText > 0 {
				shown = append(shown, string(tok))
			}
		}
	}
	if root != "svg" {
		t.Errorf("%s: root element %q, want svg", path, root)
	}
	all := strings.Join(shown, "\n")
	for _, want := range texts {
		if !strings.Contains(all, want) {
			t.Errorf("%s lacks the text %q; it shows:\n%s", path, want, all)
		}
	}
}
