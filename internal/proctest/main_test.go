package proctest_test

import (
	"os"
	"testing"

	"github.com/leasetop/leasetop/internal/pgtest"
	"github.com/leasetop/leasetop/internal/proctest"
)

// leasetopBin is the binary built once for the whole package.
var leasetopBin string

func TestMain(m *testing.M) {
	if proctest.IsRecorder() { // this test binary, started by leasetop run as its child
		os.Exit(proctest.RecorderMain())
	}
	pgtest.MainWith(m, func() (func(), error) {
		dir, err := os.MkdirTemp("", "leasetop-proctest-")
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
