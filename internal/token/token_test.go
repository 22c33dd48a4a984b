package token

import (
	"encoding/base64"
	"testing"
)

// Rule 1: a token carries at least 128 random bits; Short shows too little
// of it to impersonate the holder.
func TestNewIs128BitsAndShortHidesIt(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 100 {
		tok := New()
		raw, err := base64.RawURLEncoding.DecodeString(tok)
		if err != nil || len(raw) < 16 {
			t.Fatalf("token %q is not >= 16 bytes of base64url (%v)", tok, err)
		}
		if seen[tok] {
			t.Fatalf("token %q made twice", tok)
		}
		seen[tok] = true
		if s := Short(tok); s != tok[:6]+"…" {
			t.Fatalf("Short(%q) = %q", tok, s)
		}
	}
	if s := Short("abc"); s != "abc" {
		t.Errorf(`Short("abc") = %q`, s)
	}
}
