package cli

import (
	"context"
	"io"
	"sync"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/termtext"
)

// lsPart is one context's part of ls: what it read, or why it read nothing.
type lsPart struct {
	c      dbContext
	leases leasesView    // without --at
	owners data.OwnersAt // with --at
	err    error
}

// lsContexts is ls across contexts: every context read at once, one table
// (or one JSON object) with a CONTEXT column, each context's rows in the
// order given. A context that cannot be read is one line on stderr (and
// its error in the JSON); the others are printed all the same, and ls then
// exits 1 (2 when an instant is older than a context's history).
func lsContexts(ctx context.Context, env Env, cs []dbContext, at timeFlag, f data.HistoryFilter, asJSON bool) error {
	parts := make([]lsPart, len(cs))
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Go(func() { parts[i] = readPart(ctx, c, at, f) })
	}
	wg.Wait()
	var err error
	switch {
	case at.set && asJSON:
		err = writeOwnersContextsJSON(env.Stdout, parts)
	case at.set:
		err = writeOwnersContextsText(env.Stdout, parts)
	case asJSON:
		err = writeLeasesContextsJSON(env.Stdout, parts)
	default:
		err = writeLeasesContextsText(env.Stdout, parts)
	}
	if err != nil {
		return err
	}
	errs := make([]error, len(parts))
	for i, p := range parts {
		errs[i] = p.err
	}
	return reportContexts(env.Stderr, errs)
}

// readPart reads c's part of ls on a store of its own.
func readPart(ctx context.Context, c dbContext, at timeFlag, f data.HistoryFilter) lsPart {
	p := lsPart{c: c}
	store, err := openContext(ctx, c, data.Options{})
	if err != nil {
		p.err = err
		return p
	}
	defer store.Close()
	if at.set {
		p.owners, err = readOwnersAt(ctx, store, at.timeArg, f)
	} else {
		p.leases, err = readLeases(ctx, store, f)
	}
	if err != nil {
		p.err = c.failed(err)
	}
	return p
}

// contextJSON is one context in ls --context --json: the server time its
// leases are measured against, or why it has none.
type contextJSON struct {
	Context      string     `json:"context"`
	AsOf         *time.Time `json:"as_of,omitempty"` // ls --at: the instant, on its clock
	ServerTime   *time.Time `json:"server_time"`
	HistoryStart *time.Time `json:"history_start,omitempty"` // ls --at
	Error        *string    `json:"error"`                   // null when it was read
}

// json is p's entry in the JSON's contexts.
func (p lsPart) json(at bool) contextJSON {
	j := contextJSON{Context: p.c.name}
	switch {
	case p.err != nil:
		msg := termtext.Clean(oneLine(p.err.Error()), 0)
		j.Error = &msg
	case at:
		j.AsOf, j.ServerTime, j.HistoryStart = &p.owners.At, &p.owners.ServerTime, &p.owners.HistoryStart
	default:
		j.ServerTime = &p.leases.now
	}
	return j
}

func writeLeasesContextsJSON(w io.Writer, parts []lsPart) error {
	out := struct {
		Contexts []contextJSON `json:"contexts"`
		Leases   []leaseJSON   `json:"leases"`
		Queues   []queueJSON   `json:"queues"`
	}{Leases: []leaseJSON{}, Queues: []queueJSON{}}
	for _, p := range parts {
		out.Contexts = append(out.Contexts, p.json(false))
		if p.err == nil {
			out.Leases = leasesJSON(out.Leases, p.leases, p.c.name)
			out.Queues = queuesJSON(out.Queues, p.leases.queues, p.c.name)
		}
	}
	return writeJSON(w, out)
}

func writeOwnersContextsJSON(w io.Writer, parts []lsPart) error {
	out := struct {
		Contexts []contextJSON `json:"contexts"`
		Leases   []holdingJSON `json:"leases"`
	}{Leases: []holdingJSON{}}
	for _, p := range parts {
		out.Contexts = append(out.Contexts, p.json(true))
		if p.err == nil {
			out.Leases = holdingsJSON(out.Leases, p.owners, p.c.name)
		}
	}
	return writeJSON(w, out)
}

func writeLeasesContextsText(w io.Writer, parts []lsPart) error {
	var rows [][]string
	for _, p := range parts {
		if p.err == nil {
			rows = withContext(rows, p.c.name, leaseRows(nil, p.leases))
		}
	}
	if len(rows) == 0 {
		_, err := io.WriteString(w, "no leases held\n")
		return err
	}
	return writeColumns(w, append([][]string{withHeader(leaseHeader)}, rows...))
}

func writeOwnersContextsText(w io.Writer, parts []lsPart) error {
	var rows [][]string
	for _, p := range parts {
		if p.err != nil {
			continue
		}
		if _, err := io.WriteString(w, p.c.name+": "+asOfLine(p.owners)+"\n"); err != nil {
			return err
		}
		rows = withContext(rows, p.c.name, ownerRows(nil, p.owners))
	}
	if len(rows) == 0 {
		_, err := io.WriteString(w, "no leases held\n")
		return err
	}
	return writeColumns(w, append([][]string{withHeader(ownerHeader)}, rows...))
}

// withHeader is a table's header with the CONTEXT column first.
func withHeader(h []string) []string { return append([]string{"CONTEXT"}, h...) }

// withContext appends rows to dst, each with name in a first column.
func withContext(dst [][]string, name string, rows [][]string) [][]string {
	for _, r := range rows {
		dst = append(dst, append([]string{name}, r...))
	}
	return dst
}
