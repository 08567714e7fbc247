package supervise_test

import (
	"os"
	"testing"

	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/internal/testkit/proctest"
)

// leasetopBin is the binary built once for the whole package.
var leasetopBin string

func TestMain(m *testing.M) {
	if proctest.IsRecorder() { // this test binary, started by leasetop run as its child
		os.Exit(proctest.RecorderMain())
	}
	pgtest.MainWith(m, func() (cleanup func(), err error) {
		leasetopBin, cleanup, err = proctest.BuildTemp("leasetop-proctest-")
		return cleanup, err
	})
}
