package cli

import (
	"maps"
	"slices"

	"github.com/leasetop/leasetop/internal/data"
)

// queueJSON is one session's queue in ls --json.
type queueJSON struct {
	Context   string `json:"context,omitempty"` // with --context: the database it is in
	AccountID string `json:"account_id"`
	SessionID string `json:"session_id"`
	Length    int    `json:"length"` // live tickets
}

// queuesJSON appends the queues to dst by key, in ls's order, tagged with
// context when it is not "".
func queuesJSON(dst []queueJSON, queues map[data.Key]int, context string) []queueJSON {
	if dst == nil {
		dst = []queueJSON{}
	}
	for _, k := range slices.SortedFunc(maps.Keys(queues), compareKeys) {
		dst = append(dst, queueJSON{Context: context, AccountID: k.Account, SessionID: k.Session, Length: queues[k]})
	}
	return dst
}
