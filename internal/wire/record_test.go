package wire

import "testing"

// Every slot has a tag, and a name with that tag lands there; the slot of
// a known key is Redis's (CLUSTER KEYSLOT foo is 12182).
func TestRecordKeyLandsInTheNamesSlot(t *testing.T) {
	for s := range slots {
		if tag := slotTag(s); tag == "" || Slot("x{"+tag+"}") != s {
			t.Fatalf("slot %d: tag %q lands in %d", s, tag, Slot("x{"+tag+"}"))
		}
	}
	if got := Slot("foo"); got != 12182 {
		t.Fatalf("Slot(foo) = %d, want 12182", got)
	}
	for _, name := range []string{"lock:{a}", "lock:{order-42}", "lock:{k}:fence", "p{}x"} {
		if Slot(RecordKey(name, true)) != Slot(name) {
			t.Errorf("RecordKey(%q) = %q is not in the name's slot", name, RecordKey(name, true))
		}
	}
	if RecordKey("lock:{a}", false) != NodeRecordKey {
		t.Error("a plain server has one record")
	}
}
