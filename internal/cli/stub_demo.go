package cli

import "context"

// cmdDemo is not built yet; replace this file with demo.go.
func cmdDemo(ctx context.Context, env Env, args []string) error { return errNotBuilt }
