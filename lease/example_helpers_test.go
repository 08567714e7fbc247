package lease_test

import (
	"fmt"
	"os"

	"github.com/leasetop/leasetop/internal/pgtest"
)

// exampleDatabase returns a fresh database with the lease schema (in your
// program: the DATABASE_URL of a database where `leasetop migrate` ran) and
// a function that drops it.
func exampleDatabase() (string, func()) {
	dsn, drop, err := pgtest.NewURL()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return "", func() {}
	}
	return dsn, drop
}
