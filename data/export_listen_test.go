package data

import "context"

// DecodeEvent is decodeEvent, for the payload and fuzz tests.
var DecodeEvent = decodeEvent

// EventsSince is eventsSince: one page of the history, for the tests.
func (s *Store) EventsSince(ctx context.Context, after int64, limit int) ([]Event, error) {
	return s.eventsSince(ctx, after, limit)
}
