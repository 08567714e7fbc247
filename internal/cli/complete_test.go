package cli_test

import (
	"context"
	"net"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestCompleteFlagsOfEveryCommand: for every command, completing "--"
// offers exactly the flags its -h lists (completion learns them from the
// command itself, so none is missing or stale).
func TestCompleteFlagsOfEveryCommand(t *testing.T) {
	ctx := context.Background()
	names, _, _ := leasetop(ctx, "", "__complete", "")
	flagLine := regexp.MustCompile(`(?m)^  -(\S+)`)
	for _, name := range strings.Split(strings.TrimSpace(names), "\n")[1:] {
		if name == "help" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			help, stderr, code := leasetop(ctx, "", name, "-h")
			if code != 0 {
				t.Fatalf("%s -h: exit %d, stderr %q", name, code, stderr)
			}
			var want []string
			for _, m := range flagLine.FindAllStringSubmatch(help, -1) {
				want = append(want, "--"+m[1])
			}
			slices.Sort(want)
			out, _, _ := leasetop(ctx, "", "__complete", name, "--")
			got := strings.Split(strings.TrimSpace(out), "\n")
			if got[0] != ":nofiles" || strings.Join(got[1:], " ") != strings.Join(want, " ") {
				t.Errorf("__complete %s -- = %q, want :nofiles and %q", name, got, want)
			}
		})
	}
}

// TestCompleteIsBoundedWithoutAnswer: a database that accepts the
// connection and never answers costs a completion its bound (2 s), not the
// user's shell: no candidate, no error, exit 0.
func TestCompleteIsBoundedWithoutAnswer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, never answered
		}
	}()
	dsn := "postgres://nobody@" + ln.Addr().String() + "/none?sslmode=disable"
	start := time.Now()
	out, stderr, code := leasetop(context.Background(), dsn, "__complete", "release", "--account", "")
	took := time.Since(start)
	if code != 0 || stderr != "" || out != ":nofiles\n" {
		t.Errorf("__complete against a silent server: exit %d, stdout %q, stderr %q; want 0, only :nofiles, nothing", code, out, stderr)
	}
	if took > 10*time.Second {
		t.Errorf("__complete took %s against a silent server, want its 2 s bound", took)
	}
	t.Logf("gave up after %s", took.Round(time.Millisecond))
}
