// Command leasetop owns, watches and demonstrates session leases in
// PostgreSQL: the SQL protocol, a live terminal monitor, a lease-holding
// command runner and a multi-device demo. Run `leasetop help` for the
// subcommands.
package main

import (
	"context"
	"io"
	"os"

	"github.com/leasetop/leasetop/internal/cli"
)

func main() {
	err := run(context.Background(), os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	os.Exit(cli.Report(os.Stderr, err))
}

// run is main without the process: arguments, environment and streams in,
// an error (carrying its exit code) out.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	return cli.Run(ctx, cli.Env{Args: args, Getenv: getenv, Stdin: stdin, Stdout: stdout, Stderr: stderr})
}
