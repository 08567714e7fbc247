package cli

import "context"

// cmdRun is not built yet; replace this file with run.go.
func cmdRun(ctx context.Context, env Env, args []string) error { return errNotBuilt }
