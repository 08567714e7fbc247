package cli

import "context"

// cmdEvents is not built yet; replace this file with events.go.
func cmdEvents(ctx context.Context, env Env, args []string) error { return errNotBuilt }
