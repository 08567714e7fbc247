package lease_test

import (
	"os"
	"testing"

	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(envChild); mode != "" { // this binary, started by a test as its child
		os.Exit(childMain(mode))
	}
	pgtest.Main(m)
}
