package cli

import "context"

// cmdRelease is not built yet; replace this file with release.go.
func cmdRelease(ctx context.Context, env Env, args []string) error { return errNotBuilt }
