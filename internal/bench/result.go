package bench

import "time"

// Result is one measured line: a workload or a timed part of one.
type Result struct {
	Name        string  `json:"name"`
	Description string  `json:"description"`
	Ops         uint64  `json:"ops"`
	OpsPerSec   float64 `json:"ops_per_sec"`
	P50ms       float64 `json:"p50_ms"`
	P99ms       float64 `json:"p99_ms"`
	MaxMs       float64 `json:"max_ms"`
	// CPUPct and RSSMB are the monitor workloads' CPU (percent of one core)
	// and resident memory.
	CPUPct float64 `json:"cpu_percent,omitempty"`
	RSSMB  float64 `json:"rss_mb,omitempty"`
	// HeapMB is the Go heap the monitor holds once it has drawn its first
	// picture (the monitor-load rows), live after a collection.
	HeapMB float64 `json:"heap_mb,omitempty"`
	// Percentiles are the latency, in ms, at each percentile from 0 (the
	// least) to 100 (the most): the handoff workloads' whole distribution.
	Percentiles []float64 `json:"percentiles_ms,omitempty"`
	// ServerCPUus is the server's CPU time per operation, in microseconds
	// (the keepalive workloads: per renewal of one lease).
	ServerCPUus float64 `json:"server_cpu_us_per_op,omitempty"`
	// WALBytes is the WAL the server wrote per operation (the keepalive
	// workloads: per renewal of one lease).
	WALBytes float64 `json:"wal_bytes_per_op,omitempty"`
	// Missed and Repeated are the events a propagation workload's consumer
	// never received, or received twice.
	Missed   int64 `json:"missed,omitempty"`
	Repeated int64 `json:"repeated,omitempty"`
	// Note qualifies the line (e.g. how many events were missed).
	Note string `json:"note,omitempty"`
	// Error is why the workload failed; its numbers are then empty.
	Error string `json:"error,omitempty"`
}

func newResult(name, desc string, h *Histogram, window time.Duration) Result {
	res := Result{
		Name: name, Description: desc, Ops: h.Count(),
		P50ms: ms(h.Quantile(0.50)), P99ms: ms(h.Quantile(0.99)), MaxMs: ms(h.Max()),
	}
	if window > 0 {
		res.OpsPerSec = float64(h.Count()) / window.Seconds()
	}
	return res
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
