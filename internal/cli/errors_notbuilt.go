package cli

import "errors"

// errNotBuilt is returned by commands that are not built yet.
var errNotBuilt = errors.New("this command is not built yet")
