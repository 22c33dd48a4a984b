package wire

import (
	"testing"
	"time"
)

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

// A record reads back as the holder it names, with its fence, count and
// until; a released one as its count; anything else is no record.
func TestParseRecord(t *testing.T) {
	h, c, til, ok := ParseRecord("12 10 1700000000000 tok 1700000000000000 worker 7")
	if !ok || c != 12 || til != 1700000000000 || h.Token != "tok" || h.Fence != 10 || h.Owner != "worker 7" || h.AcquiredAt.UnixMicro() != 1700000000000000 {
		t.Fatalf("held record = %+v, %d, %d, %v", h, c, til, ok)
	}
	if h, c, _, ok := ParseRecord("12"); !ok || c != 12 || h.Token != "" {
		t.Fatalf("released record = %+v, %d, %v", h, c, ok)
	}
	for _, v := range []string{"", "tok 1700000000000000 worker", "12 x 3 tok 4"} {
		if _, _, _, ok := ParseRecord(v); ok {
			t.Errorf("ParseRecord(%q) is a record", v)
		}
	}
	if got := ParseLockValue("12 10 0 tok 1700000000000000 worker").Token; got != "tok" {
		t.Errorf("ParseLockValue of a record: token %q", got)
	}
	if got := ParseLockValue("12").Token; got != "" {
		t.Errorf("ParseLockValue of a released record: token %q", got)
	}
	if got := ParseLockValue("tok 1700000000000000 worker").Token; got != "tok" {
		t.Errorf("ParseLockValue of an older value: token %q", got)
	}
}

// RecordHold reads the hold of a voting or a learning record as stored,
// and nothing else.
func TestRecordHold(t *testing.T) {
	for v, want := range map[string]time.Duration{
		"V": 0, "V 86400000": 24 * time.Hour, "L 1 2 3": 0, "L 1 2 3 1500": 1500 * time.Millisecond,
		"": 0, "V x": 0, "V -5": 0, "V 99999999999999999999": 0, "L 1 2 3 4 5": 0, "X 100": 0,
	} {
		if got := RecordHold(v); got != want {
			t.Errorf("RecordHold(%q) = %s, want %s", v, got, want)
		}
	}
}
