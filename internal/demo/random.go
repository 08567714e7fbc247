package demo

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
)

// NewSeed returns a random seed for Config.Seed, short enough to retype.
func NewSeed() int64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return int64(binary.BigEndian.Uint64(b[:])>>34) + 1
}

// sharedPrefix is a fresh account prefix for a demo on a shared database
// ("demo-1a2b3c-"), so that two demos there never share a lease.
func sharedPrefix() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return "demo-" + hex.EncodeToString(b) + "-"
}
