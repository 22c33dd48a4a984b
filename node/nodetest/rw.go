package nodetest

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quorumlock/quorumlock/node"
)

// The read-write contract (node.ReadWriter), run by Run on nodes that
// implement it and skipped on the others.
var rwCases = []struct {
	name string
	run  func(f *rwFixture)
}{
	{"RWReadersShare", rwReadersShare},
	{"RWWriterExcludesReaders", rwWriterExcludesReaders},
	{"RWReadersExcludeWriter", rwReadersExcludeWriter},
	{"RWWriterIntentBlocksNewReaders", rwWriterIntentBlocksNewReaders},
	{"RWReaderAskingAgainYieldsToIntent", rwReaderAskingAgainYieldsToIntent},
	{"RWSplitBetweenKindsComparable", rwSplitBetweenKindsComparable},
	{"RWReaderStartsMissingCounter", rwReaderStartsMissingCounter},
	{"RWIntentExpires", rwIntentExpires},
	{"RWReaderExpires", rwReaderExpires},
	{"RWFences", rwFences},
	{"RWExtend", rwExtend},
	{"RWReleaseOnlyOwnToken", rwReleaseOnlyOwnToken},
	{"RWTombstoneRefusesLateRequests", rwTombstoneRefusesLateRequests},
	{"RWRaiseFence", rwRaiseFence},
	{"RWIndependentOfMutex", rwIndependentOfMutex},
	{"RWReleaseAnnounced", rwReleaseAnnounced},
	{"RWConcurrentWritersOneWinner", rwConcurrentWritersOneWinner},
	{"RWInvalidArguments", rwInvalidArguments},
}

type rwFixture struct {
	*fixture
	rw node.ReadWriter
}

func runRW(f *fixture, run func(*rwFixture)) {
	rw, ok := f.n.(node.ReadWriter)
	if !ok {
		f.t.Skip("node does not implement node.ReadWriter")
	}
	run(&rwFixture{fixture: f, rw: rw})
}

const (
	r = node.Shared
	w = node.Exclusive
)

func (f *rwFixture) acquire(mode node.Mode, name, token string, ttl time.Duration) node.AcquireReply {
	f.t.Helper()
	rep, err := f.rw.AcquireRW(f.ctx(), mode, node.AcquireArgs{Name: name, Token: token, TTL: ttl, Retention: long, Seed: nowMicros()})
	f.must("acquire "+mode.String(), err)
	return rep
}

func (f *rwFixture) extend(mode node.Mode, ops ...node.ExtendArgs) []node.ExtendResult {
	f.t.Helper()
	res, err := f.rw.ExtendRW(f.ctx(), mode, ops)
	f.must("extend "+mode.String(), err)
	if len(res) != len(ops) {
		f.t.Fatalf("extend of %d ops returned %d results", len(ops), len(res))
	}
	return res
}

func (f *rwFixture) release(mode node.Mode, name, token string) bool {
	f.t.Helper()
	ok, err := f.rw.ReleaseRW(f.ctx(), mode, node.ReleaseArgs{Name: name, Token: token, Tombstone: long})
	f.must("release "+mode.String(), err)
	return ok
}

func (f *rwFixture) want(what string, got node.AcquireReply, acquired bool) {
	f.t.Helper()
	if got.Acquired != acquired {
		f.t.Fatalf("%s = %+v, want acquired=%v", what, got, acquired)
	}
}

func rwReadersShare(f *rwFixture) {
	name := f.name()
	var fence uint64
	for i := range 3 {
		rep := f.acquire(r, name, fmt.Sprint("reader", i), long)
		if i == 0 {
			fence = rep.Fence
		}
		if !rep.Acquired || rep.Fence == 0 || rep.Fence != fence {
			f.t.Fatalf("reader %d on a lock no writer ever held = %+v, want acquired with the started counter %d", i, rep, fence)
		}
	}
	if again := f.acquire(r, name, "reader0", long); !again.Acquired {
		f.t.Fatalf("resent reader acquire = %+v, want acquired", again)
	}
}

func rwWriterExcludesReaders(f *rwFixture) {
	name := f.name()
	f.want("writer", f.acquire(w, name, "writer", long), true)
	rep := f.acquire(r, name, "reader", time.Second)
	if rep.Acquired || rep.Holder != node.ReleaseID("writer") || rep.HolderTTL <= 0 || rep.HolderTTL > long {
		f.t.Fatalf("reader under a writer = %+v, want refused by %s with its ttl", rep, node.ReleaseID("writer"))
	}
	rep = f.acquire(w, name, "writer2", time.Second)
	if rep.Acquired || rep.Holder != node.ReleaseID("writer") {
		f.t.Fatalf("second writer = %+v, want refused by the first", rep)
	}
	if !f.release(w, name, "writer") {
		f.t.Fatal("writer's release failed")
	}
	f.want("reader after the writer's release", f.acquire(r, name, "reader", long), true)
}

func rwReadersExcludeWriter(f *rwFixture) {
	name := f.name()
	f.acquire(r, name, "reader", long)
	rep := f.acquire(w, name, "writer", time.Second)
	if rep.Acquired || rep.Holder != node.ReleaseID("reader") || rep.HolderTTL <= 0 || rep.HolderTTL > long {
		f.t.Fatalf("writer under a reader = %+v, want refused by the reader %s with its ttl", rep, node.ReleaseID("reader"))
	}
	if !f.release(r, name, "reader") {
		f.t.Fatal("reader's release failed")
	}
	f.want("writer after the reader's release", f.acquire(w, name, "writer", long), true)
}

// A waiting writer's intent refuses new readers (not the readers already
// in: their extensions) until the writer acquires.
func rwWriterIntentBlocksNewReaders(f *rwFixture) {
	name := f.name()
	f.acquire(r, name, "old", long)
	f.want("writer under a reader", f.acquire(w, name, "writer", long), false)
	rep := f.acquire(r, name, "new", time.Second)
	if rep.Acquired || rep.Holder != node.WaitingWriterHolder || rep.HolderTTL <= 0 {
		f.t.Fatalf("new reader while a writer waits = %+v, want refused by %q", rep, node.WaitingWriterHolder)
	}
	if res := f.extend(r, ext(name, "old", long, 0)); res[0] != node.Extended {
		f.t.Fatalf("extend of a reader already in while a writer waits = %v, want extended", res)
	}
	f.release(r, name, "old")
	// The quorum client asks again with a new token per attempt.
	f.want("waiting writer once the readers left", f.acquire(w, name, "writer-2", long), true)
	f.release(w, name, "writer-2")
	f.want("new reader after the writer's release", f.acquire(r, name, "new", long), true)
}

// A reader that asks again with the same token (a split-vote round it
// thought it won) is not in: a writer's intent that arrived meanwhile
// refuses it and drops its entry, so the writer's next attempt gets in.
func rwReaderAskingAgainYieldsToIntent(f *rwFixture) {
	name := f.name()
	f.want("reader", f.acquire(r, name, "reader", long), true)
	f.want("writer under the reader", f.acquire(w, name, "writer", long), false)
	rep := f.acquire(r, name, "reader", long)
	if rep.Acquired || rep.Holder != node.WaitingWriterHolder {
		f.t.Fatalf("reader asking again while a writer waits = %+v, want refused by %q", rep, node.WaitingWriterHolder)
	}
	f.want("writer's next attempt", f.acquire(w, name, "writer-2", long), true)
}

// A writer refused by a reader and that reader refused by the writer (a
// split of the nodes between them) are told of ids they can both compare:
// the writer of the smallest reader's release id, the reader of the
// writer's. Two names stand for two nodes.
func rwSplitBetweenKindsComparable(f *rwFixture) {
	one, two := f.name(), f.name()
	readers := []string{"reader-a", "reader-b", "reader-c"}
	first := ""
	for _, tok := range readers {
		f.acquire(r, one, tok, long)
		if id := node.ReleaseID(tok); first == "" || id < first {
			first = id
		}
	}
	if rep := f.acquire(w, one, "writer", long); rep.Acquired || rep.Holder != first {
		f.t.Fatalf("writer under readers %v = %+v, want refused by the smallest release id %s", readers, rep, first)
	}
	f.want("writer on the other name", f.acquire(w, two, "writer", long), true)
	if rep := f.acquire(r, two, "reader-a", long); rep.Acquired || rep.Holder != node.ReleaseID("writer") {
		f.t.Fatalf("reader under the writer = %+v, want refused by %s", rep, node.ReleaseID("writer"))
	}
	if node.WaitingWriterHolder >= first || node.WaitingWriterHolder >= node.ReleaseID("writer") {
		f.t.Fatalf("WaitingWriterHolder %q does not sort before the release ids", node.WaitingWriterHolder)
	}
}

// A reader of a name without a counter (new, or lost with the node's
// data) starts it as a writer would, from the node's clock at least, so
// that its fence is not below the writers' before the loss; the next
// writer counts on from it.
func rwReaderStartsMissingCounter(f *rwFixture) {
	name := f.name()
	before := nowMicros()
	rep := f.acquire(r, name, "reader", long)
	if !rep.Acquired || rep.Fence < before {
		f.t.Fatalf("reader on a missing counter = %+v, want a fence of at least the clock %d", rep, before)
	}
	f.release(r, name, "reader")
	if wr := f.acquire(w, name, "writer", long); wr.Fence != rep.Fence+1 {
		f.t.Fatalf("writer after the reader: fence %d, want %d", wr.Fence, rep.Fence+1)
	}
}

// The intent is bounded: a writer that stops trying blocks readers at most
// for the TTL of its last attempt. The cleanup of a failed attempt (a
// release of its token) does not end it, as that cleanup can land after
// the node refused the attempt; a writer that gets in does.
func rwIntentExpires(f *rwFixture) {
	name := f.name()
	f.acquire(r, name, "old", long)
	f.acquire(w, name, "gone", 50*time.Millisecond)
	f.eventually("the intent to expire", func() bool { return f.acquire(r, name, "new", long).Acquired })

	other := f.name()
	f.acquire(r, other, "old", long)
	f.acquire(w, other, "undone", long)
	f.release(w, other, "undone")
	if rep := f.acquire(r, other, "new", long); rep.Acquired || rep.Holder != node.WaitingWriterHolder {
		f.t.Fatalf("reader after the waiting writer's cleanup = %+v, want refused by the intent", rep)
	}
	f.release(r, other, "old")
	f.want("writer once the readers left", f.acquire(w, other, "writer", long), true)
	f.release(w, other, "writer")
	f.want("reader after that writer's release", f.acquire(r, other, "new", long), true)
}

func rwReaderExpires(f *rwFixture) {
	name := f.name()
	f.acquire(r, name, "short", 50*time.Millisecond)
	f.acquire(r, name, "long", time.Second)
	f.release(r, name, "long")
	f.eventually("the short reader to expire", func() bool { return f.acquire(w, name, "writer", long).Acquired })
}

// Writers count; readers read the count: the last writer's fence.
func rwFences(f *rwFixture) {
	name := f.name()
	w1 := f.acquire(w, name, "w1", long)
	if !w1.Acquired || w1.Fence == 0 {
		f.t.Fatalf("first writer = %+v, want a fence", w1)
	}
	f.release(w, name, "w1")
	r1 := f.acquire(r, name, "r1", long)
	if r1.Fence != w1.Fence {
		f.t.Fatalf("reader's fence %d, want the last writer's %d", r1.Fence, w1.Fence)
	}
	if again := f.acquire(r, name, "r2", long); again.Fence != w1.Fence {
		f.t.Fatalf("second reader's fence %d, want %d (readers do not count)", again.Fence, w1.Fence)
	}
	f.release(r, name, "r1")
	f.release(r, name, "r2")
	w2 := f.acquire(w, name, "w2", long)
	if w2.Fence != w1.Fence+1 {
		f.t.Fatalf("second writer's fence %d, want %d", w2.Fence, w1.Fence+1)
	}
	if again := f.acquire(w, name, "w2", long); !again.Acquired || again.Fence != w2.Fence {
		f.t.Fatalf("resent writer acquire = %+v, want fence %d unchanged", again, w2.Fence)
	}
	// The counter is the mutex's: mutex and writers of a name count together.
	if h := f.inspect(name); h.Fence != w2.Fence {
		f.t.Fatalf("counter %d, want %d", h.Fence, w2.Fence)
	}
}

func rwExtend(f *rwFixture) {
	name := f.name()
	base := f.acquire(r, name, "reader", long).Fence
	if res := f.extend(r, ext(name, "reader", long, 0), ext(name, "lost", long, base+7)); res[0] != node.Extended || res[1] != node.Reasserted {
		f.t.Fatalf("reader extend = %v, want [extended reasserted]", res)
	}
	if h := f.inspect(name); h.Fence != base+7 {
		f.t.Fatalf("counter after a reader's extend with fence %d = %d, want raised to it", base+7, h.Fence)
	}
	if res := f.extend(w, ext(name, "writer", long, 0)); res[0] != node.NotHeld {
		f.t.Fatalf("writer re-assert while readers hold = %v, want not held", res)
	}
	f.release(r, name, "reader")
	f.release(r, name, "lost")
	if res := f.extend(w, ext(name, "writer", long, 0)); res[0] != node.Reasserted {
		f.t.Fatalf("writer re-assert on a free lock = %v, want reasserted", res)
	}
	if res := f.extend(w, ext(name, "writer", long, 0), ext(name, "other", long, 0)); res[0] != node.Extended || res[1] != node.NotHeld {
		f.t.Fatalf("writer extend = %v, want [extended not-held]", res)
	}
	if res := f.extend(r, ext(name, "reader2", long, 0)); res[0] != node.NotHeld {
		f.t.Fatalf("reader re-assert under a writer = %v, want not held", res)
	}
}

func rwReleaseOnlyOwnToken(f *rwFixture) {
	name := f.name()
	f.acquire(w, name, "writer", long)
	if f.release(w, name, "intruder") || f.release(r, name, "writer") {
		f.t.Fatal("release with another token or mode reported success")
	}
	f.want("reader while the writer holds", f.acquire(r, name, "reader", time.Second), false)
	if !f.release(w, name, "writer") || f.release(w, name, "writer") {
		f.t.Fatal("writer's release failed, or its resend succeeded")
	}
	f.acquire(r, name, "reader", long)
	if f.release(r, name, "intruder") || f.release(w, name, "reader") {
		f.t.Fatal("release with another token or mode reported success")
	}
	if !f.release(r, name, "reader") || f.release(r, name, "reader") {
		f.t.Fatal("reader's release failed, or its resend succeeded")
	}
}

func rwTombstoneRefusesLateRequests(f *rwFixture) {
	name := f.name()
	for _, mode := range []node.Mode{r, w} {
		tok := "late-" + mode.String()
		f.release(mode, name, tok) // before its acquire arrives
		rep := f.acquire(mode, name, tok, long)
		if rep.Acquired || rep.Holder != "" {
			f.t.Fatalf("%s acquire after its release = %+v, want refused by the tombstone", mode, rep)
		}
		if res := f.extend(mode, ext(name, tok, long, 0)); res[0] != node.NotHeld {
			f.t.Fatalf("%s extend after its release = %v, want not held", mode, res)
		}
	}
	f.want("writer on the untouched lock", f.acquire(w, name, "writer", long), true)
}

func rwRaiseFence(f *rwFixture) {
	name := f.name()
	base := f.acquire(r, name, "reader", long).Fence // the counter the reader started
	for _, c := range []struct {
		mode  node.Mode
		token string
		fence uint64
		held  bool
	}{{r, "reader", 5, true}, {w, "reader", 6, false}, {r, "other", 9, false}, {r, "reader", 3, true}} {
		c.fence += base
		held, err := f.rw.RaiseFenceRW(f.ctx(), c.mode, name, c.token, c.fence, long)
		f.must("raise", err)
		if held != c.held {
			f.t.Fatalf("raise %s %s to %d: held %v, want %v", c.mode, c.token, c.fence, held, c.held)
		}
	}
	if h := f.inspect(name); h.Fence != base+9 {
		f.t.Fatalf("counter = %d, want %d (raised, never lowered)", h.Fence, base+9)
	}
}

// The read-write lock of a name and its mutex are two locks (sharing the
// fence counter).
func rwIndependentOfMutex(f *rwFixture) {
	name := f.name()
	f.fixture.acquire(name, "mutex", long)
	f.want("writer beside the mutex", f.acquire(w, name, "writer", long), true)
	f.release(w, name, "writer")
	f.want("reader beside the mutex", f.acquire(r, name, "reader", long), true)
	if h := f.inspect(name); h.Token != "mutex" {
		f.t.Fatalf("mutex after read-write calls: %+v", h)
	}
	if err := f.scanNames(name); err != nil {
		f.t.Fatal(err)
	}
}

// scanNames checks that a scan lists the mutex's name and no key of the
// read-write lock.
func (f *rwFixture) scanNames(name string) error {
	p, err := f.n.Scan(f.ctx(), node.ScanArgs{Match: name + "*", Count: 1000})
	for err == nil {
		for _, got := range p.Names {
			if got != name {
				return fmt.Errorf("scan listed %q, want only %q", got, name)
			}
		}
		if p.Cursor == "" {
			return nil
		}
		p, err = f.n.Scan(f.ctx(), node.ScanArgs{Cursor: p.Cursor, Match: name + "*", Count: 1000})
	}
	if errors.Is(err, errors.ErrUnsupported) {
		return nil
	}
	return err
}

func rwReleaseAnnounced(f *rwFixture) {
	channel, rec, _ := f.subscribed("rwreleases")
	name := f.name()
	rel := func(mode node.Mode, token string) {
		_, err := f.rw.ReleaseRW(f.ctx(), mode, node.ReleaseArgs{Name: name, Token: token, Tombstone: long, Channel: channel})
		f.must("release", err)
	}
	f.acquire(r, name, "reader", long)
	rel(r, "reader")
	rel(r, "reader") // a resend announces nothing
	f.acquire(w, name, "writer", long)
	rel(w, "writer")
	want := []string{node.ReleaseID("reader") + " " + name, node.ReleaseID("writer") + " " + name}
	f.eventually("two announcements", func() bool { _, got := rec.snapshot(); return len(got) >= 2 })
	if _, got := rec.snapshot(); fmt.Sprint(got) != fmt.Sprint(want) {
		f.t.Fatalf("announcements = %q, want %q", got, want)
	}
}

// Concurrent writers and readers on one node: exactly one writer, or
// readers only.
func rwConcurrentWritersOneWinner(f *rwFixture) {
	name := f.name()
	var writers, readers atomic.Int32
	var wg sync.WaitGroup
	for i := range 16 {
		mode := w
		if i%2 == 1 {
			mode = r
		}
		wg.Go(func() {
			rep, err := f.rw.AcquireRW(f.ctx(), mode, node.AcquireArgs{Name: name, Token: fmt.Sprint("tok", i), TTL: long, Retention: long})
			if err != nil {
				f.t.Error(err)
				return
			}
			if rep.Acquired && mode == w {
				writers.Add(1)
			} else if rep.Acquired {
				readers.Add(1)
			}
		})
	}
	wg.Wait()
	if nw, nr := writers.Load(), readers.Load(); nw > 1 || (nw == 1) == (nr > 0) {
		f.t.Fatalf("%d writers and %d readers won, want exactly one writer or only readers", nw, nr)
	}
}

func rwInvalidArguments(f *rwFixture) {
	name := f.name()
	checks := map[string]error{}
	_, checks["mode 0"] = f.rw.AcquireRW(f.ctx(), 0, node.AcquireArgs{Name: name, Token: "a", TTL: long})
	_, checks["mode 3 extend"] = f.rw.ExtendRW(f.ctx(), 3, []node.ExtendArgs{ext(name, "a", long, 0)})
	_, checks["mode 0 release"] = f.rw.ReleaseRW(f.ctx(), 0, node.ReleaseArgs{Name: name, Token: "a"})
	_, checks["mode 0 raise"] = f.rw.RaiseFenceRW(f.ctx(), 0, name, "a", 1, long)
	_, checks["empty token"] = f.rw.AcquireRW(f.ctx(), r, node.AcquireArgs{Name: name, TTL: long})
	_, checks["ttl under a ms"] = f.rw.AcquireRW(f.ctx(), w, node.AcquireArgs{Name: name, Token: "a", TTL: time.Microsecond})
	_, checks["token with a space"] = f.rw.ExtendRW(f.ctx(), r, []node.ExtendArgs{ext(name, "a b", long, 0)})
	_, checks["empty name"] = f.rw.ReleaseRW(f.ctx(), w, node.ReleaseArgs{Token: "a"})
	_, checks["fence above MaxInt64"] = f.rw.RaiseFenceRW(f.ctx(), r, name, "a", 1<<63, long)
	for what, err := range checks {
		if !errors.Is(err, node.ErrInvalidArgument) {
			f.t.Errorf("%s: err = %v, want ErrInvalidArgument", what, err)
		}
	}
	if h := f.inspect(name); !empty(h) {
		f.t.Fatalf("invalid calls left %+v", h)
	}
	f.want("reader after the invalid calls", f.acquire(r, name, "a", long), true)
}
