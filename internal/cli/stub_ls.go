package cli

import "context"

// cmdLs is not built yet; replace this file with ls.go.
func cmdLs(ctx context.Context, env Env, args []string) error { return errNotBuilt }
