package bench

import (
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  Config
		want string // substring of the error; "" for valid
	}{
		{"defaults", Config{}, ""},
		{"too many clients", Config{Clients: 1000}, "--clients"},
		{"negative clients", Config{Clients: -1}, "--clients"},
		{"fewer keys than clients", Config{Clients: 8, Keys: 4}, "--keys"},
		{"tiny duration", Config{Duration: time.Microsecond}, "--duration"},
		{"unknown workload", Config{Only: []string{"nope"}}, `unknown workload "nope"`},
		{"group", Config{Only: []string{"handoff"}}, ""},
		{"name", Config{Only: []string{"renew-notify", "select1"}}, ""},
	}
	for _, tt := range tests {
		err := tt.cfg.Validate()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: Validate() = %v, want nil", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: Validate() = %v, want an error containing %q", tt.name, err, tt.want)
		}
	}
}

func TestSelectWorkloads(t *testing.T) {
	t.Parallel()
	tests := []struct {
		only []string
		want string
	}{
		{[]string{"handoff"}, "handoff-notify,handoff-poll-100ms,handoff-poll-1s"},
		{[]string{"acquire"}, "acquire"},
		{[]string{"acquire", "select1", "propagation"}, "select1,acquire,propagation-100,propagation-1000,propagation-poll-1000"},
		{[]string{" renew-notify ", ""}, "renew-notify"},
	}
	for _, tt := range tests {
		ws, err := selectWorkloads(tt.only)
		if err != nil {
			t.Fatalf("selectWorkloads(%q): %v", tt.only, err)
		}
		var got []string
		for _, w := range ws {
			got = append(got, w.name)
		}
		if strings.Join(got, ",") != tt.want {
			t.Errorf("selectWorkloads(%q) = %v, want %s", tt.only, got, tt.want)
		}
	}
}
