package pgserver_test

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	if os.Getenv(envOwner) == "1" { // this test binary, started as a cluster's owner
		os.Exit(ownerMain())
	}
	os.Exit(m.Run())
}
