package demo_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/leasetop/leasetop/internal/pgtest"
)

// leasetopBin is the leasetop binary built once for the process tests; set
// by TestMain before any test runs.
var leasetopBin string

func TestMain(m *testing.M) {
	pgtest.MainWith(m, func() (func(), error) {
		dir, err := os.MkdirTemp("", "leasetop-demo-test-")
		if err != nil {
			return nil, err
		}
		leasetopBin = filepath.Join(dir, "leasetop")
		out, err := exec.Command("go", "build", "-o", leasetopBin, "github.com/leasetop/leasetop").CombinedOutput()
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("go build leasetop: %w\n%s", err, out)
		}
		return func() { os.RemoveAll(dir) }, nil
	})
}
