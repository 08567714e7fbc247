package device_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/demo/device"
)

func TestDecodeReport(t *testing.T) {
	run := uuid.MustParse("0d6f6c1e-7a4b-4c1d-9a2e-1f2b3c4d5e6f")
	tests := []struct {
		name    string
		line    string
		want    device.Report
		wantErr bool
	}{
		{"started", `{"t":"started","session":"chat-1","run":"0d6f6c1e-7a4b-4c1d-9a2e-1f2b3c4d5e6f","fence":7}`,
			device.Report{Kind: device.ReportStarted, Session: "chat-1", Run: run, Fence: 7}, false},
		{"refused", `{"t":"refused","session":"chat-2","holder":"phone pid 9","remaining":2500000000}`,
			device.Report{Kind: device.ReportRefused, Session: "chat-2", Holder: "phone pid 9", Remaining: 2500 * time.Millisecond}, false},
		{"unknown kind", `{"t":"\u001b[2Jexploded"}`, device.Report{}, true},
		{"not JSON", `panic: runtime error`, device.Report{}, true},
		{"bad run id", `{"t":"started","run":"nope"}`, device.Report{}, true},
		{"overlong", `{"t":"error","err":"` + strings.Repeat("x", 70<<10) + `"}`, device.Report{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := device.DecodeReport([]byte(tt.line))
			if tt.wantErr {
				if !errors.Is(err, device.ErrBadReport) {
					t.Fatalf("DecodeReport err = %v, want ErrBadReport", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("DecodeReport = %+v, %v\nwant          %+v", got, err, tt.want)
			}
		})
	}
}
