package cli

import (
	"maps"
	"slices"

	"github.com/leasetop/leasetop/internal/data"
)

// queueJSON is one session's queue in ls --json.
type queueJSON struct {
	AccountID string `json:"account_id"`
	SessionID string `json:"session_id"`
	Length    int    `json:"length"` // live tickets
}

// queuesJSON lists the queues by key, in ls's order.
func queuesJSON(queues map[data.Key]int) []queueJSON {
	out := []queueJSON{}
	for _, k := range slices.SortedFunc(maps.Keys(queues), compareKeys) {
		out = append(out, queueJSON{AccountID: k.Account, SessionID: k.Session, Length: queues[k]})
	}
	return out
}
