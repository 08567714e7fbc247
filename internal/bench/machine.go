package bench

import (
	"context"
	"os"
	"runtime"
	"strings"
	"syscall"
	"unicode"

	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/sqlcall"
)

// Machine describes where a run happened: without it, numbers mean nothing.
type Machine struct {
	Cores             int    `json:"cores"`
	CPU               string `json:"cpu"`
	Platform          string `json:"platform"`
	GoVersion         string `json:"go_version"`
	LoadStart         string `json:"load_average_start"`
	LoadEnd           string `json:"load_average_end"`
	Server            string `json:"server"`
	PostgresVersion   string `json:"postgres_version"`
	Fsync             string `json:"fsync"`
	SynchronousCommit string `json:"synchronous_commit"`
	WalSyncMethod     string `json:"wal_sync_method"`
	DataFS            string `json:"data_filesystem,omitempty"`
	NotifyRenewals    bool   `json:"notify_renewals"`
}

// describeMachine reads the local machine and the server's settings.
func describeMachine(ctx context.Context, conn *pgx.Conn, cfg Config) (Machine, error) {
	m := Machine{
		Cores:     runtime.NumCPU(),
		CPU:       cpuModel(),
		Platform:  runtime.GOOS + "/" + runtime.GOARCH,
		GoVersion: runtime.Version(),
		LoadStart: loadAverage(),
		Server:    clean(cfg.Server),
		DataFS:    fsType(cfg.DataDir),
	}
	for _, s := range []struct {
		name string
		dst  *string
	}{
		{"server_version", &m.PostgresVersion},
		{"fsync", &m.Fsync},
		{"synchronous_commit", &m.SynchronousCommit},
		{"wal_sync_method", &m.WalSyncMethod},
	} {
		if err := conn.QueryRow(ctx, "SELECT current_setting($1)", s.name).Scan(s.dst); err != nil {
			return m, err
		}
		*s.dst = clean(*s.dst)
	}
	err := conn.QueryRow(ctx, sqlcall.NotifyRenewals).Scan(&m.NotifyRenewals)
	return m, err
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return clean(strings.TrimSpace(v))
		}
	}
	return "unknown"
}

// loadAverage returns the 1, 5 and 15 minute load averages.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// fsType names the file system holding dir, "" when unknown.
func fsType(dir string) string {
	if dir == "" {
		return ""
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return ""
	}
	switch uint32(st.Type) {
	case 0xEF53:
		return "ext4"
	case 0x58465342:
		return "xfs"
	case 0x9123683E:
		return "btrfs"
	case 0x01021994:
		return "tmpfs (fsync costs nothing)"
	case 0x794c7630:
		return "overlayfs"
	case 0x2FC12FC1:
		return "zfs"
	default:
		return "unknown"
	}
}

// clean drops control characters: text from the server or the system is
// printed on a terminal.
func clean(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, s)
}
