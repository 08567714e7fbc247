package exporter_test

import (
	"os"
	"testing"

	"github.com/leasetop/leasetop/internal/pgtest"
	"github.com/leasetop/leasetop/internal/proctest"
)

// leasetopBin is the leasetop binary, built once for the package: the tests
// run the exporter as the real process it is in production.
var leasetopBin string

func TestMain(m *testing.M) {
	pgtest.MainWith(m, func() (func(), error) {
		dir, err := os.MkdirTemp("", "leasetop-exporter-test-")
		if err != nil {
			return nil, err
		}
		cleanup := func() { os.RemoveAll(dir) }
		leasetopBin, err = proctest.Build(dir)
		if err != nil {
			cleanup()
			return nil, err
		}
		return cleanup, nil
	})
}
