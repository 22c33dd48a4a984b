package nodetest

// The trail records the fence the lock settled on, not only the count of
// its node: a node that counted lower (counters drift apart) learns the
// fence from the settle's RaiseFence or from any extension, which pass it.
// It is never lowered, and another token's trail is left alone.
func trailRecordsSettledFence(f *fixture) {
	name := f.name()
	a := f.acquire(name, "a", long)
	f.extend(ext(name, "a", long, a.Fence+100))
	f.extend(ext(name, "a", long, a.Fence+50)) // lower: no change
	f.raise(name, "b", a.Fence+300)            // another token's raise: the counter only
	if err := f.forceRelease(name, "a", 0, 0); err != nil {
		f.t.Fatal(err)
	}
	b := f.acquire(name, "b", long)
	if b.Previous.Token != "a" || b.Previous.Fence != a.Fence+100 {
		f.t.Fatalf("after an extension with fence %d: previous %+v, want a at that fence", a.Fence+100, b.Previous)
	}
	f.raise(name, "b", b.Fence+7)
	if err := f.forceRelease(name, "b", 0, 0); err != nil {
		f.t.Fatal(err)
	}
	if c := f.acquire(name, "c", long); c.Previous.Token != "b" || c.Previous.Fence != b.Fence+7 {
		f.t.Fatalf("after a raise to %d: previous %+v, want b at that fence", b.Fence+7, c.Previous)
	}
}
