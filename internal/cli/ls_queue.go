package cli

import (
	"cmp"
	"slices"

	"github.com/leasetop/leasetop/data"
)

// queueJSON is one session's queue in ls --json.
type queueJSON struct {
	AccountID string `json:"account_id"`
	SessionID string `json:"session_id"`
	Length    int    `json:"length"` // live tickets
}

// queuesJSON lists the queues by key.
func queuesJSON(queues map[data.Key]int) []queueJSON {
	out := []queueJSON{}
	for k, n := range queues {
		out = append(out, queueJSON{AccountID: k.Account, SessionID: k.Session, Length: n})
	}
	slices.SortFunc(out, func(a, b queueJSON) int {
		return cmp.Or(cmp.Compare(a.AccountID, b.AccountID), cmp.Compare(a.SessionID, b.SessionID))
	})
	return out
}
