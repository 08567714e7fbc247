package lease_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/lease"
)

func TestTokenEnvRoundTrip(t *testing.T) {
	t.Parallel()
	want := lease.Token{Key: lease.Key{Account: "acme", Session: "chat 42"}, RunID: uuid.New(), Fence: 17}
	env := map[string]string{}
	for _, kv := range want.Env() {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	got, err := lease.TokenFromEnv(func(k string) string { return env[k] })
	if err != nil || got != want {
		t.Errorf("TokenFromEnv(Env()) = %+v, %v; want %+v", got, err, want)
	}
}

func TestTokenFromEnvInvalid(t *testing.T) {
	t.Parallel()
	good := map[string]string{
		lease.EnvAccountID: "a", lease.EnvSessionID: "s",
		lease.EnvRunID: uuid.New().String(), lease.EnvFence: "3",
	}
	tests := []struct {
		name, key, value string
	}{
		{"missing account", lease.EnvAccountID, ""},
		{"control character in session", lease.EnvSessionID, "s\x1b[2J"},
		{"run id not a UUID", lease.EnvRunID, "nope"},
		{"nil run id", lease.EnvRunID, uuid.Nil.String()},
		{"fence not a number", lease.EnvFence, "x"},
		{"fence zero", lease.EnvFence, "0"},
		{"fence negative", lease.EnvFence, "-4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{}
			for k, v := range good {
				env[k] = v
			}
			env[tt.key] = tt.value
			if _, err := lease.TokenFromEnv(func(k string) string { return env[k] }); !errors.Is(err, data.ErrInvalid) {
				t.Errorf("TokenFromEnv with %s=%q err = %v, want ErrInvalid", tt.key, tt.value, err)
			}
		})
	}
}

// A LostError carries text from the database; its message quotes it, so no
// control character reaches a terminal.
func TestLostErrorQuotesDatabaseText(t *testing.T) {
	t.Parallel()
	e := &lease.LostError{
		Key: lease.Key{Account: "a\x1b]0;owned\x07", Session: "s"}, Fence: 9, Reason: lease.ErrForceReleased,
		By: lease.Event{Kind: data.KindForceReleased, Actor: "ops\x1b[2J", Reason: "bye\r\n"},
	}
	msg := e.Error()
	if strings.ContainsAny(msg, "\x1b\x07\r\n") {
		t.Errorf("LostError.Error() = %q, want no control characters", msg)
	}
	for _, want := range []string{"force-released", `"ops\x1b[2J"`, `"bye\r\n"`, "fence 9"} {
		if !strings.Contains(msg, want) {
			t.Errorf("LostError.Error() = %q, want it to contain %q", msg, want)
		}
	}
}
