package keyname

import "testing"

func TestLayout(t *testing.T) {
	if got := Of("lock:", "k"); got != "lock:{k}" {
		t.Fatalf("Of = %q", got)
	}
	if got := Of("lock:", Grouped("s", ":slot:3")); got != "lock:{s}:slot:3}" {
		t.Fatalf("grouped name = %q", got)
	}
	for _, c := range []struct {
		name, key string
		ok        bool
	}{
		{"lock:{k}", "k", true},
		{"lock:{s}:slot:3}", "s}:slot:3", true},
		{"lock:{}", "", true},
		{"other:{k}", "", false},
		{"lock:{k", "", false},
	} {
		key, ok := Key("lock:", c.name)
		if ok != c.ok || (ok && key != c.key) {
			t.Fatalf("Key(%q) = %q, %v; want %q, %v", c.name, key, ok, c.key, c.ok)
		}
	}
}
