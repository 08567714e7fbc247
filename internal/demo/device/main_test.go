package device_test

import (
	"testing"

	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }
