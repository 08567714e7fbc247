package exporter_test

import (
	"testing"

	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/internal/testkit/proctest"
)

// leasetopBin is the leasetop binary, built once for the package: the tests
// run the exporter as the real process it is in production.
var leasetopBin string

func TestMain(m *testing.M) {
	pgtest.MainWith(m, func() (func(), error) {
		bin, cleanup, err := proctest.BuildTemp("leasetop-exporter-test-")
		leasetopBin = bin
		return cleanup, err
	})
}
