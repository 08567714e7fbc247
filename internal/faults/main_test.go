package faults_test

import (
	"os"
	"strconv"
	"testing"

	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/internal/testkit/proctest"
)

// leasetopBin is the leasetop binary, built once for the package.
var leasetopBin string

func TestMain(m *testing.M) {
	if isWriter() { // this test binary, started by leasetop run as its command
		os.Exit(writerMain())
	}
	pgtest.MainWith(m, func() (cleanup func(), err error) {
		leasetopBin, cleanup, err = proctest.BuildTemp("leasetop-faults-")
		return cleanup, err
	})
}

// longRun reports whether LEASETOP_LONG asks for the larger bursts and
// longer outages (.ci/run sets it).
func longRun() bool {
	v, _ := strconv.ParseBool(os.Getenv("LEASETOP_LONG"))
	return v
}

// scale returns short, or long under LEASETOP_LONG.
func scale[T any](short, long T) T {
	if longRun() {
		return long
	}
	return short
}
