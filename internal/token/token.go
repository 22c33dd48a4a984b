// Package token makes the token of one acquisition, the secret that only
// its holder knows and that every node checks before it extends or deletes
// a key, and the short form of it that logs show.
package token

import (
	"crypto/rand"
	"encoding/base64"
)

// bytes is the randomness of one acquisition's token: 128 bits, so two
// clients never share a token by chance.
const bytes = 16

// New returns a fresh token: 128 bits from crypto/rand, base64url.
func New() string {
	var b [bytes]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on Linux (Go 1.24+ it panics instead of erring)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// Short is what logs show of a token: enough to correlate, too little to
// impersonate the holder.
func Short(t string) string {
	if len(t) > 6 {
		return t[:6] + "…"
	}
	return t
}
