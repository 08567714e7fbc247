package pgserver_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	osexec "os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/pgserver"
)

// envOwner makes this test binary an owner of a Patroni cluster: it starts
// one, prints its folder and waits to be killed.
const envOwner = "LEASETOP_PATRONI_OWNER"

func ownerMain() int {
	c, err := pgserver.StartCluster(context.Background(), pgserver.ClusterOptions{HAProxy: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, "owner:", err)
		return 1
	}
	fmt.Println(c.Dir())
	select {} // until a signal ends this process
}

// TestPatroniClusterStopsWithItsOwner starts a real process that owns a
// Patroni cluster (etcd, two nodes, HAProxy) and ends it with a signal:
// SIGTERM (the cluster's signal watch stops everything and removes the
// folder, then the signal takes its course) and SIGKILL (nothing runs in
// the owner: the kernel's Pdeathsig tells etcd, each Patroni and HAProxy to
// stop, and each Patroni stops its PostgreSQL). Either way no process of
// the cluster is left.
func TestPatroniClusterStopsWithItsOwner(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd := osexec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), envOwner+"=1")
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			lines := make(chan string, 1)
			go func() {
				line, _ := bufio.NewReader(out).ReadString('\n')
				lines <- strings.TrimSpace(line)
				exited <- cmd.Wait()
			}()
			var dir string
			select {
			case dir = <-lines:
			case <-time.After(3 * time.Minute):
				_ = cmd.Process.Kill()
				t.Fatalf("the owner did not start its cluster within 3 minutes: %s", stderr.String())
			}
			if !strings.Contains(dir, pgserver.DirPrefix) {
				t.Fatalf("the owner printed %q, want its cluster's folder; stderr: %s", dir, stderr.String())
			}
			t.Cleanup(func() { _ = os.RemoveAll(dir) })
			if procs := processesUnder(dir); len(procs) < 6 {
				t.Fatalf("%d processes name the cluster's folder, want etcd, HAProxy, 2 Patroni, 2 postmasters: %v", len(procs), procs)
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			select {
			case <-exited:
			case <-time.After(2 * time.Minute):
				_ = cmd.Process.Kill()
				t.Fatalf("the owner did not exit within 2 minutes of %s", sig)
			}
			deadline := time.Now().Add(time.Minute)
			for {
				procs := processesUnder(dir)
				if len(procs) == 0 {
					break
				}
				if time.Now().After(deadline) {
					for _, p := range procs {
						t.Errorf("a minute after the owner got %s this still runs: %s", sig, p)
					}
					break
				}
				time.Sleep(50 * time.Millisecond) // polling a condition until the deadline
			}
			if _, err := os.Stat(dir); sig == syscall.SIGTERM && !os.IsNotExist(err) {
				t.Errorf("after SIGTERM the cluster's folder %s is still there (stat: %v)", dir, err)
			}
		})
	}
}
