package cli

import (
	"context"
	"errors"
)

// Commands not built yet. Each moves to its own file when it is.

var errNotBuilt = errors.New("this command is not built yet")

func cmdWatch(ctx context.Context, env Env, args []string) error   { return errNotBuilt }
func cmdDemo(ctx context.Context, env Env, args []string) error    { return errNotBuilt }
func cmdRun(ctx context.Context, env Env, args []string) error     { return errNotBuilt }
func cmdLs(ctx context.Context, env Env, args []string) error      { return errNotBuilt }
func cmdEvents(ctx context.Context, env Env, args []string) error  { return errNotBuilt }
func cmdRelease(ctx context.Context, env Env, args []string) error { return errNotBuilt }
func cmdBench(ctx context.Context, env Env, args []string) error   { return errNotBuilt }
func cmdDevice(ctx context.Context, env Env, args []string) error  { return errNotBuilt }
