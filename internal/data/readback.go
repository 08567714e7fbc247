package data

import "context"

// ReadBack reads back from lease.event, in one read, the rows that
// notifications (the Events of a FromNotify batch) name, and returns them
// in the notifications' order, each id once. Renewal notifications name no
// row and are left out. A notification is only a claim (anyone who may
// connect can NOTIFY), so a consumer acts on what ReadBack returns, never
// on a payload: a forged id has no row, a forged kind or key is replaced by
// the row's.
//
// ReadBack reports to the listener the ids it found no row for, and all of
// them when the read fails (see Missing): the listener then delivers each
// of those rows once it reads it committed. A consumer that drops
// notifications without reading them back must report them itself.
func (l *Listener) ReadBack(ctx context.Context, notes []Event) ([]Event, error) {
	var ids []int64
	seen := make(map[int64]bool, len(notes))
	for _, n := range notes {
		if n.Kind != KindRenewed && !seen[n.ID] {
			seen[n.ID] = true
			ids = append(ids, n.ID)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := l.store.EventsByID(ctx, ids)
	if err != nil {
		l.Missing(ids)
		return nil, err
	}
	byID := make(map[int64]Event, len(rows))
	for _, r := range rows {
		byID[r.ID] = r
	}
	out := make([]Event, 0, len(rows))
	var missing []int64
	for _, id := range ids {
		if r, ok := byID[id]; ok {
			out = append(out, r)
		} else {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		l.Missing(missing)
	}
	return out, nil
}
