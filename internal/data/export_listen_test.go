package data

// DecodeEvent is decodeEvent, for the payload and fuzz tests.
var DecodeEvent = decodeEvent
