package redlock

import (
	"crypto/rand"
	"encoding/base64"
)

// tokenBytes is the randomness of one acquisition's token: 128 bits, so two
// clients never share a token by chance.
const tokenBytes = 16

func newToken() string {
	var b [tokenBytes]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on Linux (Go 1.24+ it panics instead of erring)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// shortToken is what logs show of a token: enough to correlate, too little to
// impersonate the holder.
func shortToken(t string) string {
	if len(t) > 6 {
		return t[:6] + "…"
	}
	return t
}
