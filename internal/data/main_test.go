package data_test

import (
	"os"
	"testing"

	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(envNotifier); mode != "" { // this binary, started by a test as the notifier
		os.Exit(notifierMain(mode))
	}
	pgtest.Main(m)
}
