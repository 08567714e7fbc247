package lease

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/data"
)

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   Config
		want Config
	}{
		{"zero", Config{}, Config{TTL: 15 * time.Second, RenewInterval: 5 * time.Second, SafetyMargin: 1500 * time.Millisecond,
			RenewTimeout: 5 * time.Second, PollInterval: 2 * time.Second, ReleaseTimeout: 5 * time.Second}},
		{"short TTL keeps a 100ms margin", Config{TTL: time.Second}, Config{TTL: time.Second, RenewInterval: time.Second / 3,
			SafetyMargin: 100 * time.Millisecond, RenewTimeout: time.Second / 3, PollInterval: 2 * time.Second, ReleaseTimeout: 5 * time.Second}},
		{"tiny TTL caps the margin at TTL/2", Config{TTL: 100 * time.Millisecond}, Config{TTL: 100 * time.Millisecond,
			RenewInterval: 100 * time.Millisecond / 3, SafetyMargin: 50 * time.Millisecond, RenewTimeout: 100 * time.Millisecond / 3,
			PollInterval: 2 * time.Second, ReleaseTimeout: 5 * time.Second}},
		{"explicit values stay", Config{TTL: 3 * time.Second, RenewInterval: time.Second, SafetyMargin: time.Second, RenewTimeout: 200 * time.Millisecond,
			PollInterval: time.Second, ReleaseTimeout: time.Second},
			Config{TTL: 3 * time.Second, RenewInterval: time.Second, SafetyMargin: time.Second, RenewTimeout: 200 * time.Millisecond,
				PollInterval: time.Second, ReleaseTimeout: time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.in.withDefaults()
			if err != nil {
				t.Fatalf("withDefaults(%+v) err = %v", tt.in, err)
			}
			if got != tt.want {
				t.Errorf("withDefaults(%+v) = %+v, want %+v", tt.in, got, tt.want)
			}
		})
	}
}

func TestConfigInvalid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   Config
		want string
	}{
		{"negative TTL", Config{TTL: -time.Second}, "ttl"},
		{"TTL over a day", Config{TTL: 25 * time.Hour}, "ttl"},
		{"renew not before deadline", Config{TTL: 3 * time.Second, RenewInterval: 3 * time.Second}, "renew interval"},
		{"renew equals TTL - margin", Config{TTL: 3 * time.Second, SafetyMargin: time.Second, RenewInterval: 2 * time.Second}, "renew interval"},
		{"negative renew", Config{RenewInterval: -time.Second}, "renew interval"},
		{"margin not below TTL", Config{TTL: time.Second, SafetyMargin: time.Second}, "safety margin"},
		{"negative margin", Config{SafetyMargin: -time.Second}, "safety margin"},
		{"negative renew timeout", Config{RenewTimeout: -time.Second}, "renew timeout"},
		{"negative poll", Config{PollInterval: -time.Second}, "poll interval"},
		{"negative release timeout", Config{ReleaseTimeout: -time.Second}, "release timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.in.withDefaults()
			if !errors.Is(err, data.ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("withDefaults(%+v) err = %v, want ErrInvalid naming %q", tt.in, err, tt.want)
			}
		})
	}
}
