package data

import (
	"fmt"
	"strconv"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/leasetop/leasetop/internal/termtext"
)

// Bounds enforced by the schema (and checked here first, for a clear error
// without a round trip).
const (
	MaxIDBytes     = 512
	MaxHolderBytes = 256
	MaxReasonBytes = 512
	// MaxAttachmentBytes bounds a holder's attachment.
	MaxAttachmentBytes = 1024
	MaxTTL             = 24 * time.Hour
)

// ValidateKey checks both ids: 1..512 bytes of UTF-8 without control
// characters, bidirectional formatting characters, line separators or
// invisible characters such as zero-width spaces (what termtext escapes and
// lease.safe_text refuses), so no two ids that differ look the same for want
// of a character that shows.
func ValidateKey(k Key) error {
	if err := validateText("account", k.Account, 1, MaxIDBytes); err != nil {
		return err
	}
	return validateText("session", k.Session, 1, MaxIDBytes)
}

// ValidateTTL checks 0 < ttl <= 24h.
func ValidateTTL(ttl time.Duration) error {
	if ttl <= 0 || ttl > MaxTTL {
		return &InputError{Field: "ttl", Problem: "must be greater than 0 and at most 24h, got " + ttl.String()}
	}
	return nil
}

// ValidateHolder checks a holder label: at most 256 bytes of UTF-8 without
// control, bidirectional formatting or invisible characters.
func ValidateHolder(holder string) error { return validateText("holder", holder, 0, MaxHolderBytes) }

// ValidateReason checks a forced release's reason: at most 512 bytes of UTF-8
// without control, bidirectional formatting or invisible characters.
func ValidateReason(reason string) error { return validateText("reason", reason, 0, MaxReasonBytes) }

// ValidateAttachment checks a holder's attachment: at most 1 KiB of UTF-8
// without control, bidirectional formatting or invisible characters, as
// holder labels ("" is none).
func ValidateAttachment(attachment string) error {
	return validateText("attachment", attachment, 0, MaxAttachmentBytes)
}

func validateText(field, s string, minBytes, maxBytes int) error {
	switch {
	case len(s) < minBytes:
		return &InputError{Field: field, Problem: "must not be empty"}
	case len(s) > maxBytes:
		return &InputError{Field: field, Problem: "must be at most " + strconv.Itoa(maxBytes) + " bytes"}
	case !utf8.ValidString(s):
		return &InputError{Field: field, Problem: "must be valid UTF-8"}
	}
	for _, r := range s {
		switch {
		case unicode.IsControl(r):
			return &InputError{Field: field, Problem: "must not contain control characters"}
		case termtext.Unsafe(r):
			return &InputError{Field: field, Problem: fmt.Sprintf("must not contain %U (bidirectional formatting, line separator and invisible characters are refused)", r)}
		}
	}
	return nil
}
