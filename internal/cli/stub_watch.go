package cli

import "context"

// cmdWatch is not built yet; replace this file with watch.go.
func cmdWatch(ctx context.Context, env Env, args []string) error { return errNotBuilt }
