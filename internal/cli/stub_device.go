package cli

import "context"

// cmdDevice is not built yet; replace this file with device.go.
func cmdDevice(ctx context.Context, env Env, args []string) error { return errNotBuilt }
