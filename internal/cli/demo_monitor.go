package cli

import (
	"context"

	"github.com/leasetop/leasetop/internal/demo"
)

// runDemoMonitor runs the demo under the live monitor.
func runDemoMonitor(ctx context.Context, env Env, db *demoDB, cfg demo.Config) error {
	return usageErrorf("demo: the monitor is not built yet: run leasetop demo --headless")
}
