package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes the report as a header, the results table, the ratios with
// their targets, and a legend of the workloads.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	r.writeHeader(&b)
	b.WriteString("\n")
	r.writeResults(&b)
	if len(r.Ratios) > 0 {
		b.WriteString("\n")
		r.writeRatios(&b)
	}
	b.WriteString("\n")
	r.writeLegend(&b)
	_, err := io.WriteString(w, b.String())
	return err
}

func (r *Report) writeHeader(b *strings.Builder) {
	m, s := r.Machine, r.Settings
	fmt.Fprintf(b, "leasetop bench: %d clients (one connection each), %d keys, %gs per workload after %gs warm-up\n",
		s.Clients, s.Keys, s.DurationS, s.WarmupS)
	fmt.Fprintf(b, "machine:  %d cores (%s), %s, %s; load average %s at start, %s at end\n",
		m.Cores, m.CPU, m.Platform, m.GoVersion, m.LoadStart, m.LoadEnd)
	fs := ""
	if m.DataFS != "" {
		fs = ", data on " + m.DataFS
	}
	fmt.Fprintf(b, "database: %s, PostgreSQL %s, fsync=%s, synchronous_commit=%s, wal_sync_method=%s%s, notify_renewals=%t\n",
		m.Server, m.PostgresVersion, m.Fsync, m.SynchronousCommit, m.WalSyncMethod, fs, m.NotifyRenewals)
}

func (r *Report) writeResults(b *strings.Builder) {
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\tops/s\tp50 ms\tp99 ms\tmax ms\tn\t")
	for _, res := range r.Results {
		if res.Error != "" {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\t  FAILED: %s\n", res.Name, res.Error)
			continue
		}
		note := ""
		if res.Note != "" {
			note = "  " + res.Note
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%.3f\t%.3f\t%.3f\t%d\t%s\n",
			res.Name, res.OpsPerSec, res.P50ms, res.P99ms, res.MaxMs, res.Ops, note)
	}
	_ = tw.Flush()
}

func (r *Report) writeRatios(b *strings.Builder) {
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "targets and ratios (same run)\tvalue\ttarget\t")
	for _, ra := range r.Ratios {
		value := fmt.Sprintf("%.2f%s", ra.Value, unitSuffix(ra.Unit))
		verdict := ""
		if ra.Met != nil {
			verdict = "NOT MET"
			if *ra.Met {
				verdict = "met"
			}
		}
		if ra.Error != "" {
			value = "-"
			verdict = strings.TrimSpace(verdict + " (ERROR: " + strings.Join(strings.Fields(ra.Error), " ") + ")")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", ra.Name, value, ra.Target, verdict)
	}
	_ = tw.Flush()
}

func (r *Report) writeLegend(b *strings.Builder) {
	b.WriteString("workloads:\n")
	for _, res := range r.Results {
		if res.Description != "" {
			fmt.Fprintf(b, "  %-26s %s\n", res.Name, res.Description)
		}
	}
}
