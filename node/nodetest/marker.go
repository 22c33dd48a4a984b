package nodetest

import (
	"time"

	"github.com/quorumlock/quorumlock/node"
)

// markerGap is how long the marker cases let pass between calls: the ages
// they check are lower bounds, so a slow machine only makes them larger.
const markerGap = 30 * time.Millisecond

// Every acquire reply (acquired, held by another, refused by a tombstone)
// reports the key's marker age, which grows with the node's clock.
func markerReportsDataAge(f *fixture) {
	name := f.name()
	first := f.acquire(name, "a", long)
	if !first.DataAgeKnown {
		f.t.Fatalf("first acquire = %+v: no data age reported", first)
	}
	time.Sleep(markerGap)
	held := f.acquire(name, "b", long)
	if held.Acquired || !held.DataAgeKnown || held.DataAge < markerGap {
		f.t.Fatalf("acquire of a held key after %s = %+v: want the marker's age of at least that", markerGap, held)
	}
	f.release(name, "a", long)
	gone := f.acquire(name, "a", long)
	if gone.Acquired || !gone.DataAgeKnown || gone.DataAge < markerGap {
		f.t.Fatalf("acquire refused by a tombstone = %+v: want the marker's age of at least %s", gone, markerGap)
	}
}

// A release keeps the marker: the next acquisition reports its age, not a
// new marker.
func markerOutlivesRelease(f *fixture) {
	name := f.name()
	f.acquire(name, "a", long)
	f.release(name, "a", 0)
	time.Sleep(markerGap)
	r := f.acquire(name, "b", long)
	if !r.Acquired || r.DataAge < markerGap {
		f.t.Fatalf("acquire after a release = %+v: the marker was not kept", r)
	}
}

// The marker expires with the retention when the key is idle, and a new one
// starts from zero.
func markerExpiresWithRetention(f *fixture) {
	name := f.name()
	short := 50 * time.Millisecond
	f.acquireArgs(node.AcquireArgs{Name: name, Token: "a", TTL: short, Retention: short})
	time.Sleep(3 * short)
	r := f.acquireArgs(node.AcquireArgs{Name: name, Token: "b", TTL: short, Retention: short})
	if !r.Acquired || !r.DataAgeKnown || r.DataAge != 0 {
		f.t.Fatalf("acquire after the retention ran out = %+v: want a new marker (age 0)", r)
	}
}

// An extension resets the marker's expiry as it does the counter's: a lock
// held longer than its acquisition's retention keeps its marker.
func extendKeepsMarkerAlive(f *fixture) {
	name := f.name()
	short := 100 * time.Millisecond
	r := f.acquireArgs(node.AcquireArgs{Name: name, Token: "a", TTL: long, Retention: short})
	f.extend(ext(name, "a", long, r.Fence))
	time.Sleep(3 * short)
	held := f.acquire(name, "b", long)
	if !held.DataAgeKnown || held.DataAge < 3*short {
		f.t.Fatalf("acquire after the extension = %+v: the marker did not outlive the acquisition's retention", held)
	}
}

// Inspect reports the marker's age as acquire does, and none for a key
// never acquired on the node.
func inspectReportsDataAge(f *fixture) {
	if h := f.inspect(f.name()); h.DataAgeKnown {
		f.t.Fatalf("a key never acquired inspected as %+v: want no marker", h)
	}
	name := f.name()
	f.acquire(name, "a", long)
	time.Sleep(markerGap)
	h := f.inspect(name)
	if !h.DataAgeKnown || h.DataAge < markerGap {
		f.t.Fatalf("inspect %s after the acquire = %+v: want the marker's age of at least that", markerGap, h)
	}
	f.release(name, "a", long)
	if r := f.acquire(name, "b", long); !r.Acquired || r.DataAge < h.DataAge {
		f.t.Fatalf("acquire after inspect = %+v: want the marker inspect saw (age at least %s)", r, h.DataAge)
	}
}

// The marker records the acquisition that wrote it (its At, in µs): every
// later acquire reports that creator, whoever acquires, until the marker
// expires; the next marker is the next acquisition's.
func markerReportsCreator(f *fixture) {
	name := f.name()
	short := 50 * time.Millisecond
	first := time.UnixMicro(1_700_000_000_000_001)
	args := func(token string, at time.Time) node.AcquireArgs {
		return node.AcquireArgs{Name: name, Token: token, TTL: short, Retention: short, At: at}
	}
	r := f.acquireArgs(args("a", first))
	if r.DataCreator != uint64(first.UnixMicro()) {
		f.t.Fatalf("first acquire = %+v: want the creator %d", r, first.UnixMicro())
	}
	held := f.acquireArgs(args("b", first.Add(time.Second)))
	if held.DataCreator != uint64(first.UnixMicro()) {
		f.t.Fatalf("acquire of the held key = %+v: want the marker's creator %d", held, first.UnixMicro())
	}
	time.Sleep(3 * short)
	next := first.Add(time.Hour)
	r = f.acquireArgs(args("c", next))
	if !r.Acquired || r.DataAge != 0 || r.DataCreator != uint64(next.UnixMicro()) {
		f.t.Fatalf("acquire after the marker expired = %+v: want a new marker by %d", r, next.UnixMicro())
	}
	if r := f.acquire(f.name(), "d", long); r.DataCreator != 0 {
		f.t.Fatalf("acquire without an acquisition time = %+v: want creator 0", r)
	}
}

// Every acquire reports how long before it the marker was last touched,
// and touches it: an acquire right after another reports a touch younger
// than the marker itself (0 for the marker it writes).
func markerReportsTouchedAge(f *fixture) {
	name := f.name()
	first := f.acquire(name, "a", long)
	if !first.DataTouchedKnown || first.DataTouchedAge != 0 {
		f.t.Fatalf("first acquire = %+v: want the new marker touched now", first)
	}
	time.Sleep(markerGap)
	idle := f.acquire(name, "b", long)
	if !idle.DataTouchedKnown || idle.DataTouchedAge < markerGap {
		f.t.Fatalf("acquire %s after the last = %+v: want a touch at least that old", markerGap, idle)
	}
	time.Sleep(markerGap)
	again := f.acquire(name, "b", long)
	if !again.DataTouchedKnown || again.DataTouchedAge >= again.DataAge {
		f.t.Fatalf("acquire after a touch = %+v: want the touch younger than the marker", again)
	}
}

// An extension touches the marker as an acquire does.
func extendTouchesMarker(f *fixture) {
	name := f.name()
	r := f.acquire(name, "a", long)
	time.Sleep(markerGap)
	f.extend(ext(name, "a", long, r.Fence))
	time.Sleep(markerGap)
	held := f.acquire(name, "b", long)
	if !held.DataTouchedKnown || held.DataTouchedAge < markerGap || held.DataTouchedAge >= held.DataAge {
		f.t.Fatalf("acquire after the extension = %+v: want the extension's touch (at least %s old, younger than the marker)", held, markerGap)
	}
}

// MarkerRetention keeps the marker past a shorter retention, on acquire and
// on extend.
func markerRetentionKeepsMarker(f *fixture) {
	short := 50 * time.Millisecond
	name := f.name()
	f.acquireArgs(node.AcquireArgs{Name: name, Token: "a", TTL: short, Retention: short, MarkerRetention: long})
	extended := f.name()
	r := f.acquireArgs(node.AcquireArgs{Name: extended, Token: "a", TTL: short, Retention: short})
	op := ext(extended, "a", short, r.Fence)
	op.Retention, op.MarkerRetention = short, long
	f.extend(op)
	time.Sleep(3 * short)
	for _, n := range []string{name, extended} {
		got := f.acquireArgs(node.AcquireArgs{Name: n, Token: "b", TTL: short, Retention: short})
		if !got.DataAgeKnown || got.DataAge < 3*short {
			f.t.Fatalf("acquire of %s after the retention ran out = %+v: want the marker kept by its marker retention", n, got)
		}
	}
}

// Inspect reports how long ago the marker was last touched, and does not
// touch it.
func inspectReportsTouchedAge(f *fixture) {
	name := f.name()
	f.acquire(name, "a", long)
	time.Sleep(markerGap)
	h := f.inspect(name)
	if !h.DataTouchedKnown || h.DataTouchedAge < markerGap {
		f.t.Fatalf("inspect %s after the acquire = %+v: want a touch at least that old", markerGap, h)
	}
	if r := f.acquire(name, "b", long); !r.DataTouchedKnown || r.DataTouchedAge < h.DataTouchedAge {
		f.t.Fatalf("acquire after inspect = %+v: want the acquire's touch (at least %s old), inspect touched it", r, h.DataTouchedAge)
	}
}

// A busy key's marker is not rewritten by every call (its touch is
// rewritten once per eighth of the marker retention), yet the touch that
// acquire and inspect report is never older than the key's last acquire or
// extension: each call's report is checked against the client's clock
// taken before the last touching call was sent.
func markerTouchNeverLooksOlder(f *fixture) {
	name := f.name()
	args := func(token string) node.AcquireArgs {
		return node.AcquireArgs{Name: name, Token: token, TTL: long, MarkerRetention: long}
	}
	r := f.acquireArgs(args("a"))
	for range 3 {
		time.Sleep(markerGap)
		touched := time.Now()
		if got := f.acquireArgs(args("b")); got.Acquired || !got.DataTouchedKnown {
			f.t.Fatalf("acquire of the held key = %+v: want held, the touch known", got)
		}
		time.Sleep(markerGap)
		got := f.acquireArgs(args("c"))
		if !got.DataTouchedKnown || got.DataTouchedAge > time.Since(touched) {
			f.t.Fatalf("acquire %s after a touch = %+v: want the touch at most that old", time.Since(touched), got)
		}
		time.Sleep(markerGap)
		touched = time.Now()
		op := ext(name, "a", long, r.Fence)
		op.MarkerRetention = long
		f.extend(op)
		time.Sleep(markerGap)
		if h := f.inspect(name); !h.DataTouchedKnown || h.DataTouchedAge > time.Since(touched) {
			f.t.Fatalf("inspect %s after an extension = %+v: want the touch at most that old", time.Since(touched), h)
		}
	}
}
