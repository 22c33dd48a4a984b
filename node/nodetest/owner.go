package nodetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/quorumlock/quorumlock/node"
)

// The owner, trail, force-release and scan parts of the contract.

// owned acquires name for token with an owner and an acquisition time.
func (f *fixture) owned(name, token, owner string, at time.Time, ttl time.Duration) node.AcquireReply {
	f.t.Helper()
	r := f.acquireArgs(node.AcquireArgs{Name: name, Token: token, TTL: ttl, Retention: long, Owner: owner, At: at})
	if !r.Acquired {
		f.t.Fatalf("acquire of %s by %s: %+v, want acquired", name, token, r)
	}
	return r
}

// expired waits until name's key is gone.
func (f *fixture) expired(name string) {
	f.t.Helper()
	f.eventually("the key to expire", func() bool { return f.inspect(name).Token == "" })
}

// The owner and acquisition time are stored with the token, to the
// microsecond, and a resend keeps the first ones.
func ownerRecorded(f *fixture) {
	name := f.name()
	at := time.UnixMicro(1_700_000_000_123_456)
	owner := "worker 7 host/42/prog ünïcode"
	f.owned(name, "a", owner, at, long)
	h := f.inspect(name)
	if h.Token != "a" || h.Owner != owner || !h.AcquiredAt.Equal(at) || h.TTL <= 0 {
		f.t.Fatalf("inspect = %+v, want token a, owner %q, acquired at %s", h, owner, at)
	}
	f.owned(name, "a", "someone else", at.Add(time.Hour), long)
	if h := f.inspect(name); h.Owner != owner || !h.AcquiredAt.Equal(at) {
		f.t.Fatalf("after a resend: %+v, want the first owner and time", h)
	}
	if r := f.acquire(name, "b", long); r.Acquired || r.Holder != node.ReleaseID("a") {
		f.t.Fatalf("acquire by another token: %+v, want held by a", r)
	}
	if !f.release(name, "a", 0) {
		f.t.Fatal("release of an owned key failed")
	}
	// Without owner or time nothing is recorded.
	f.acquire(name, "c", long)
	if h := f.inspect(name); h.Token != "c" || h.Owner != "" || !h.AcquiredAt.IsZero() {
		f.t.Fatalf("inspect of an unowned key = %+v", h)
	}
}

// A key re-asserted by an extension carries the op's owner and time.
func reassertCarriesOwner(f *fixture) {
	name := f.name()
	at := time.UnixMicro(1_700_000_000_000_001)
	op := ext(name, "a", long, 5)
	op.Owner, op.At = "w", at
	if res := f.extend(op); res[0] != node.Reasserted {
		f.t.Fatalf("extend of a missing key = %v, want reasserted", res[0])
	}
	if h := f.inspect(name); h.Token != "a" || h.Owner != "w" || !h.AcquiredAt.Equal(at) {
		f.t.Fatalf("re-asserted key = %+v, want owner w at %s", h, at)
	}
	op.Owner = "changed"
	f.extend(op)
	if h := f.inspect(name); h.Owner != "w" {
		f.t.Fatalf("an extension changed the owner: %+v", h)
	}
}

// An acquisition after a holder let the key expire reports that holder
// (token, owner, time, fence as raised); after a release it reports none.
func trailReportsExpiredHolder(f *fixture) {
	name := f.name()
	at := time.UnixMicro(1_700_000_000_000_042)
	first := f.owned(name, "a", "crashed worker", at, 50*time.Millisecond)
	if first.Previous.Token != "" {
		f.t.Fatalf("first acquisition reports a previous holder: %+v", first.Previous)
	}
	f.raise(name, "a", first.Fence+3) // the fence the lock settled on
	f.expired(name)
	r := f.owned(name, "b", "rescuer", time.Now(), long)
	p := r.Previous
	if p.Token != "a" || p.Owner != "crashed worker" || !p.AcquiredAt.Equal(at) || p.Fence != first.Fence+3 {
		f.t.Fatalf("previous = %+v, want token a, owner %q, at %s, fence %d", p, "crashed worker", at, first.Fence+3)
	}
	if r.Fence <= p.Fence {
		f.t.Fatalf("fence %d is not above the previous holder's %d", r.Fence, p.Fence)
	}
	if again := f.owned(name, "b", "rescuer", time.Now(), long); again.Previous.Token != "" {
		f.t.Fatalf("a resend reports a previous holder: %+v", again.Previous)
	}
	f.release(name, "b", 0)
	if r := f.owned(name, "c", "next", time.Now(), long); r.Previous.Token != "" {
		f.t.Fatalf("acquisition after a release reports %+v, want no previous holder", r.Previous)
	}
	// A release by another token leaves c's trail.
	f.release(name, "intruder", 0)
	f.raise(name, "c", 0)
	f.must("force release", f.forceRelease(name, "c", 0, 0))
	// The evicted holder's own release (its loss cleanup) finds no key and
	// leaves the trail too.
	if f.release(name, "c", 0) {
		f.t.Fatal("release after a force release deleted a key")
	}
	if r := f.owned(name, "d", "next", time.Now(), long); r.Previous.Token != "c" {
		f.t.Fatalf("after c was force-released: previous %+v, want c", r.Previous)
	}
}

func (f *fixture) forceRelease(name, token string, fence uint64, tombstone time.Duration) error {
	_, err := f.n.ForceRelease(f.ctx(), node.ForceReleaseArgs{Name: name, Token: token, Fence: fence, Tombstone: tombstone, Retention: long})
	return err
}

// ForceRelease deletes only the named token's key, raises the counter in
// every case, and tombstones the token so that its extensions cannot put
// the key back.
func forceRelease(f *fixture) {
	name := f.name()
	a := f.owned(name, "a", "stuck", time.Now(), long)
	ok, err := f.n.ForceRelease(f.ctx(), node.ForceReleaseArgs{Name: name, Token: "other", Fence: a.Fence + 100, Retention: long})
	f.must("force release", err)
	if ok {
		f.t.Fatal("force release of another token reported the key deleted")
	}
	if h := f.inspect(name); h.Token != "a" || h.Fence != a.Fence+100 {
		f.t.Fatalf("after a force release of another token: %+v, want a held, counter %d", h, a.Fence+100)
	}
	ok, err = f.n.ForceRelease(f.ctx(), node.ForceReleaseArgs{Name: name, Token: "a", Fence: a.Fence + 200, Tombstone: long, Retention: long})
	f.must("force release", err)
	if !ok {
		f.t.Fatal("force release of the holder's token did not delete the key")
	}
	if h := f.inspect(name); h.Token != "" || h.Fence != a.Fence+200 {
		f.t.Fatalf("after force release: %+v, want free, counter %d", h, a.Fence+200)
	}
	if res := f.extend(ext(name, "a", long, a.Fence)); res[0] != node.NotHeld {
		f.t.Fatalf("the evicted holder's extension = %v, want not held", res[0])
	}
	if r := f.acquire(name, "a", long); r.Acquired {
		f.t.Fatal("the evicted token acquired again through its tombstone")
	}
	b := f.owned(name, "b", "next", time.Now(), long)
	if b.Fence != a.Fence+201 || b.Previous.Token != "a" || b.Previous.Owner != "stuck" {
		f.t.Fatalf("next acquisition: %+v, want fence %d and previous holder a", b, a.Fence+201)
	}
	// A missing counter is created at the fence.
	free := f.name()
	if ok, err := f.n.ForceRelease(f.ctx(), node.ForceReleaseArgs{Name: free, Token: "x", Fence: 77, Retention: long}); err != nil || ok {
		f.t.Fatalf("force release of a free key = %v, %v", ok, err)
	}
	if h := f.inspect(free); h.Fence != 77 || h.Token != "" {
		f.t.Fatalf("force release of a free key left %+v, want counter 77", h)
	}
}

// A force release is announced like a release: once, and only when a
// waiter found the key held.
func forceReleaseAnnounced(f *fixture) {
	channel, rec, _ := f.subscribed("releases")
	name, unwaited, marker := f.name(), f.name(), f.name()
	for _, k := range []struct{ name, token string }{{name, "a"}, {unwaited, "u"}, {marker, "m"}} {
		f.acquire(k.name, k.token, long)
		if k.name != unwaited {
			if r := f.acquireArgs(node.AcquireArgs{Name: k.name, Token: "waiter", TTL: long, Waiter: true}); r.Acquired {
				f.t.Fatal("a waiter acquired a held key")
			}
		}
	}
	force := func(name, token string) {
		_, err := f.n.ForceRelease(f.ctx(), node.ForceReleaseArgs{Name: name, Token: token, Tombstone: long, Channel: channel})
		f.must("force release", err)
	}
	force(name, "a")
	force(unwaited, "u")
	force(name, "a") // nothing left to delete: no announcement
	force(marker, "m")
	want := []string{node.ReleaseID("a") + " " + name, node.ReleaseID("m") + " " + marker}
	f.eventually("the marker's announcement", func() bool { _, got := rec.snapshot(); return len(got) >= 2 })
	if _, got := rec.snapshot(); fmt.Sprint(got) != fmt.Sprint(want) {
		f.t.Fatalf("announcements = %q, want %q", got, want)
	}
}

// Scan pages through the held lock keys that match, never their counters,
// trails or tombstones; a released key may be listed too (a node that
// keeps its counter in the key's record lists it until the record
// expires: callers inspect what they list). The glob is Redis's.
func scanMatches(f *fixture) {
	base := fmt.Sprintf("nodetest:{scan.%d.%d.", time.Now().UnixNano(), seq.Add(1))
	var held []string
	released := map[string]bool{}
	for i := range 30 {
		name := fmt.Sprintf("%s%02d}", base, i)
		f.acquire(name, "t", long)
		if i%3 == 0 { // released: only its counter, trail-free, and tombstone stay
			f.release(name, "t", long)
			released[name] = true
			continue
		}
		held = append(held, name)
	}
	// heldOf drops the released names a node may list.
	heldOf := func(names []string) []string {
		var out []string
		for _, n := range names {
			if !released[n] {
				out = append(out, n)
			}
		}
		return out
	}
	f.acquire(base+"x*}", "t", long) // a literal star, for the escape below
	scan := func(match string, count int) []string {
		f.t.Helper()
		seen := map[string]bool{}
		cursor, pages := "", 0
		for {
			p, err := f.n.Scan(f.ctx(), node.ScanArgs{Cursor: cursor, Match: match, Count: count})
			f.must("scan", err)
			for _, n := range p.Names {
				seen[n] = true
			}
			if cursor = p.Cursor; cursor == "" {
				break
			}
			if pages++; pages > 100000 {
				f.t.Fatal("scan never ended")
			}
		}
		var out []string
		for n := range seen {
			out = append(out, n)
		}
		slices.Sort(out)
		return out
	}
	esc := strings.NewReplacer("{", "\\{", "}", "\\}", "*", "\\*", "?", "\\?", "[", "\\[").Replace(base)
	if got := heldOf(scan(esc+"[0-9][0-9]}", 4)); fmt.Sprint(got) != fmt.Sprint(held) {
		f.t.Fatalf("scan = %q\nwant %q", got, held)
	}
	want := []string{}
	for _, n := range held {
		if strings.HasPrefix(n, base+"1") {
			want = append(want, n)
		}
	}
	if got := heldOf(scan(esc+"1?}", 0)); fmt.Sprint(got) != fmt.Sprint(want) {
		f.t.Fatalf("scan 1? = %q\nwant %q", got, want)
	}
	if got := scan(esc+"x\\*}", 3); fmt.Sprint(got) != fmt.Sprint([]string{base + "x*}"}) {
		f.t.Fatalf("scan with an escaped star = %q", got)
	}
	if got := scan(esc+"[^0-9]*", 3); fmt.Sprint(got) != fmt.Sprint([]string{base + "x*}"}) {
		f.t.Fatalf("scan with a negated class = %q", got)
	}
}

// Bad input of the owner, scan and force-release calls is a typed error.
func invalidOwnerArguments(f *fixture) {
	name := f.name()
	ctx := f.ctx()
	check := func(what string, err error) {
		f.t.Helper()
		if !errors.Is(err, node.ErrInvalidArgument) {
			f.t.Errorf("%s: err = %v, want ErrInvalidArgument", what, err)
		}
	}
	_, err := f.n.Acquire(ctx, node.AcquireArgs{Name: name, Token: "a", TTL: time.Second, Owner: "two\nlines"})
	check("acquire with a newline in the owner", err)
	_, err = f.n.Acquire(ctx, node.AcquireArgs{Name: name, Token: "a", TTL: time.Second, Owner: strings.Repeat("o", node.MaxOwnerLen+1)})
	check("acquire with a long owner", err)
	_, err = f.n.Acquire(ctx, node.AcquireArgs{Name: name, Token: "a b", TTL: time.Second})
	check("acquire with a space in the token", err)
	_, err = f.n.Acquire(ctx, node.AcquireArgs{Name: name, Token: "!a", TTL: time.Second})
	check("acquire with a token that starts with an older client's waiter mark", err)
	_, err = f.n.Extend(ctx, []node.ExtendArgs{{Name: name, Token: "a", TTL: time.Second, Owner: "\x00"}})
	check("extend with a NUL in the owner", err)
	_, err = f.n.ForceRelease(ctx, node.ForceReleaseArgs{Name: name})
	check("force release without token", err)
	_, err = f.n.ForceRelease(ctx, node.ForceReleaseArgs{Token: "a"})
	check("force release without name", err)
	_, err = f.n.Scan(ctx, node.ScanArgs{Count: -1})
	check("scan with a negative count", err)
	if h := f.inspect(name); !empty(h) {
		f.t.Fatalf("rejected calls left %+v", h)
	}
}
