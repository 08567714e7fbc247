package faults_test

import (
	"os"
	"strconv"
	"testing"

	"github.com/leasetop/leasetop/internal/pgtest"
	"github.com/leasetop/leasetop/internal/proctest"
)

// leasetopBin is the leasetop binary, built once for the package.
var leasetopBin string

func TestMain(m *testing.M) {
	if isWriter() { // this test binary, started by leasetop run as its command
		os.Exit(writerMain())
	}
	pgtest.MainWith(m, func() (func(), error) {
		dir, err := os.MkdirTemp("", "leasetop-faults-")
		if err != nil {
			return nil, err
		}
		cleanup := func() { os.RemoveAll(dir) }
		if leasetopBin, err = proctest.Build(dir); err != nil {
			cleanup()
			return nil, err
		}
		return cleanup, nil
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
