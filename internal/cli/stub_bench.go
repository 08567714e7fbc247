package cli

import "context"

// cmdBench is not built yet; replace this file with bench.go.
func cmdBench(ctx context.Context, env Env, args []string) error { return errNotBuilt }
