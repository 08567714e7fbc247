package demo_test

import (
	"testing"

	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/internal/testkit/proctest"
)

// leasetopBin is the leasetop binary built once for the process tests; set
// by TestMain before any test runs.
var leasetopBin string

func TestMain(m *testing.M) {
	pgtest.MainWith(m, func() (cleanup func(), err error) {
		leasetopBin, cleanup, err = proctest.BuildTemp("leasetop-demo-test-")
		return cleanup, err
	})
}
