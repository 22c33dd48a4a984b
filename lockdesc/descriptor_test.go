package lockdesc_test

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/quorumlock/quorumlock/lockdesc"
	"github.com/quorumlock/quorumlock/redlock"
)

// The seed's key, and Parse(Key(d)) == d for descriptors whose parts hold
// the separator, glob characters and the escape character itself.
func TestKeyRoundTrip(t *testing.T) {
	d := lockdesc.Descriptor{Subject: "consolidation-job", Predicate: "triggering", Resources: []string{"fs-abc123", "VA-IRRL-LIN"}}
	key, err := d.Key()
	if want := "exclusive:consolidation-job:triggering:fs-abc123:VA-IRRL-LIN"; err != nil || key != want {
		t.Fatalf("Key = %q, %v; want %q", key, err, want)
	}
	check := func(d lockdesc.Descriptor) {
		t.Helper()
		key, err := d.Key()
		if err != nil {
			t.Fatalf("Key(%+v): %v", d, err)
		}
		if strings.ContainsAny(key, "*?[]\\") || strings.Count(key, ":") != 2+len(d.Resources) {
			t.Fatalf("key %q of %+v holds a glob character or a stray separator", key, d)
		}
		got, err := lockdesc.Parse(key)
		if d.Kind == "" {
			d.Kind = lockdesc.Exclusive
		}
		if err != nil || !reflect.DeepEqual(got, d) {
			t.Fatalf("Parse(%q) = %+v, %v; want %+v", key, got, err, d)
		}
	}
	check(d)
	check(lockdesc.Descriptor{Kind: lockdesc.Shared, Subject: "a:b", Predicate: "*", Resources: []string{"[x]", `\`, "%3A", "?", "100%", "é:ü"}})
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []rune("ab:*?[]\\%-_3Aé/ ")
	part := func() string {
		var b strings.Builder
		for range 1 + rng.IntN(6) {
			b.WriteRune(alphabet[rng.IntN(len(alphabet))])
		}
		return b.String()
	}
	for range 2000 {
		d := lockdesc.Descriptor{Kind: []lockdesc.Kind{"", lockdesc.Exclusive, lockdesc.Shared}[rng.IntN(3)], Subject: part(), Predicate: part()}
		for range 1 + rng.IntN(3) {
			d.Resources = append(d.Resources, part())
		}
		check(d)
	}
}

// Bad keys and descriptors are ErrInvalidArgument, never a panic.
func TestBadInput(t *testing.T) {
	for _, key := range []string{
		"", "exclusive", "exclusive:s:p", "exclusive:s:p:", ":s:p:r", "exclusive::p:r", "exclusive:s::r",
		"bogus:s:p:r", "exclusive:s:p:r*", "exclusive:s:p:[r]", `exclusive:s:p:a\b`, "exclusive:s:p:r?",
		"exclusive:s:p:%", "exclusive:s:p:%3", "exclusive:s:p:%ZZ", "exclusive:s:p:%3a", "exclusive:s:p:%41",
		"exclusive:s:p:r::x",
	} {
		if d, err := lockdesc.Parse(key); !errors.Is(err, lockdesc.ErrInvalidArgument) {
			t.Errorf("Parse(%q) = %+v, %v; want ErrInvalidArgument", key, d, err)
		}
	}
	for _, d := range []lockdesc.Descriptor{
		{}, {Subject: "s", Predicate: "p"}, {Subject: "s", Predicate: "p", Resources: []string{""}},
		{Subject: "", Predicate: "p", Resources: []string{"r"}}, {Kind: "intent", Subject: "s", Predicate: "p", Resources: []string{"r"}},
		{Subject: "s", Predicate: "p", Resources: []string{strings.Repeat("r", redlock.MaxKeyLength)}},
	} {
		if key, err := d.Key(); !errors.Is(err, lockdesc.ErrInvalidArgument) {
			t.Errorf("Key(%+v) = %q, %v; want ErrInvalidArgument", d, key, err)
		}
		if r := d.Resource(); r != "" {
			t.Errorf("Resource(%+v) = %q for an invalid descriptor", d, r)
		}
	}
	if err := (lockdesc.Pattern{Kind: "intent"}).Validate(); !errors.Is(err, lockdesc.ErrInvalidArgument) {
		t.Errorf("Pattern with kind intent: %v", err)
	}
}

// globMatch is Redis's glob for the patterns Glob writes: '*' is the only
// special character in them.
func globMatch(pattern, s string) bool {
	if pattern == "" {
		return s == ""
	}
	if pattern[0] == '*' {
		for i := 0; i <= len(s); i++ {
			if globMatch(pattern[1:], s[i:]) {
				return true
			}
		}
		return false
	}
	return s != "" && s[0] == pattern[0] && globMatch(pattern[1:], s[1:])
}

// Every key of a descriptor that a pattern matches also matches its glob
// (so Find never misses one), and the glob is narrower than "*" where the
// pattern says something.
func TestPatternGlobCoversMatch(t *testing.T) {
	ds := []lockdesc.Descriptor{
		{Subject: "consolidation-job", Predicate: "triggering", Resources: []string{"fs-abc123", "VA-IRRL-LIN"}},
		{Subject: "page", Predicate: "extracting", Resources: []string{"fs-abc123", "doc-456", "3"}},
		{Kind: lockdesc.Shared, Subject: "schema", Predicate: "reading", Resources: []string{"tenant-123", "VA-IRRL-LIN"}},
		{Subject: "page", Predicate: "extracting", Resources: []string{"fs-abc1234", "doc:7"}},
		{Subject: "fs-abc123", Predicate: "x", Resources: []string{"y"}},
	}
	ps := []lockdesc.Pattern{
		{}, {Subject: "page"}, {Kind: lockdesc.Shared}, {Resources: []string{"fs-abc123"}}, {Resource: "fs-abc123"},
		{Resource: "VA-IRRL-LIN"}, {Resources: []string{"", "doc-456"}}, {Resource: "doc:7"}, {Subject: "page", Predicate: "extracting", Resources: []string{"fs-abc123"}},
	}
	matches := map[int]int{}
	for i, p := range ps {
		for _, d := range ds {
			key, _ := d.Key()
			if p.Match(d) {
				matches[i]++
				if !globMatch(p.Glob(), key) {
					t.Errorf("pattern %+v matches %q but its glob %q does not", p, key, p.Glob())
				}
			}
		}
	}
	// The exact answers of a few queries.
	for i, want := range map[int]int{0: 5, 1: 2, 2: 1, 3: 2, 4: 2, 5: 2, 6: 1, 7: 1, 8: 1} {
		if matches[i] != want {
			t.Errorf("pattern %+v matched %d descriptors, want %d", ps[i], matches[i], want)
		}
	}
}
