package data

// Poll mode's reads, for the EXPLAIN test.
const (
	PollSQL     = pollSQL
	PollGapsSQL = pollGapsSQL
)
