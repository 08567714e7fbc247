package lease_test

import (
	"os"
	"strconv"
	"testing"
)

// envQueueRounds sets how many rounds TestQueueGrantsInOrderAcrossProcesses
// runs: 8 by default, 1000 for the figure
// (LEASETOP_QUEUE_ROUNDS=1000 go test ./lease -run TestQueueGrantsInOrderAcrossProcesses -count=1 -v -timeout 2h).
const envQueueRounds = "LEASETOP_QUEUE_ROUNDS"

// queueRounds returns the rounds asked for in $LEASETOP_QUEUE_ROUNDS, or def.
func queueRounds(t *testing.T, def int) int {
	t.Helper()
	s := os.Getenv(envQueueRounds)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a count of rounds, at least 1", envQueueRounds, s)
	}
	return n
}
