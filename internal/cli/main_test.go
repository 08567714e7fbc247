// The CLI's tests drive the monitor's scriptable companions (ls, events,
// release) and watch's refusals through cli.Run, in-process, against a real
// PostgreSQL, each test on its own database.

package cli_test

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/cli"
	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/internal/testkit/proctest"
	"github.com/leasetop/leasetop/internal/testkit/syncbuf"
)

func TestMain(m *testing.M) {
	pgtest.MainWith(m, func() (func(), error) { return func() { removeBinary() }, nil })
}

// leasetop runs a command in-process with DATABASE_URL=dsn.
func leasetop(ctx context.Context, dsn string, args ...string) (stdout, stderr string, code int) {
	var out, errOut syncbuf.Buffer
	err := run(ctx, dsn, &out, &errOut, args...)
	code = cli.Report(&errOut, err)
	return out.String(), errOut.String(), code
}

func run(ctx context.Context, dsn string, out, errOut *syncbuf.Buffer, args ...string) error {
	env := map[string]string{"DATABASE_URL": dsn, "HOME": os.TempDir()}
	return cli.Run(ctx, cli.Env{Args: args, Getenv: func(k string) string { return env[k] },
		Stdin: strings.NewReader(""), Stdout: out, Stderr: errOut})
}

// acquire acquires acct/sess for a fresh run and returns its public run id,
// the one ls, events and release show and take.
func acquire(t *testing.T, conn *pgx.Conn, acct, sess, ttl, holder string) uuid.UUID {
	t.Helper()
	r := uuid.New()
	if _, err := conn.Exec(context.Background(), `SELECT lease.acquire($1, $2, $3, $4::interval, $5)`, acct, sess, r, ttl, holder); err != nil {
		t.Fatal(err)
	}
	return data.PublicRunID(r)
}

// leasetopBinary builds the leasetop binary once, for the tests that need
// a real process (leasetop run starts itself again as its command's
// guardian; a shell completes it; a terminal shows it). TestMain removes it.
var leasetopBinary = sync.OnceValues(func() (string, error) {
	bin, cleanup, err := proctest.BuildTemp("leasetop-cli-test-")
	if err == nil {
		removeBinary = cleanup
	}
	return bin, err
})

var removeBinary = func() {}

// builtBinary returns the leasetop binary's path, built on first use.
func builtBinary(t testing.TB) string {
	t.Helper()
	bin, err := leasetopBinary()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}
