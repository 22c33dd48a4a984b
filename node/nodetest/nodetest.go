// Package nodetest checks that a node.Node keeps the contract the quorum
// client relies on. quorumlock runs it against its Redis node (on real
// redis-server processes, standalone and cluster-enabled), its memory node
// and its rueidis node; run it against your own implementation too (the
// checks of an optional capability the node lacks are skipped), from a
// test of your node, with its *testing.T:
//
//	nodetest.Run(t, func(t *testing.T) node.Node { return newMyNode(t) })
//
// Every subtest uses names of its own, in braces ("nodetest:{...}") so that
// a cluster routes a lock, its counter and its tombstones to one slot; the
// nodes newNode returns may share one server. Waits for expiry poll with a
// generous hang guard and never assert how fast the node is. The subtests
// named RW* check the read-write calls (node.ReadWriter) and are skipped
// for a node that does not implement them.
package nodetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/node"
)

// Run runs the contract as subtests, each on a node from newNode.
func Run(t *testing.T, newNode func(t *testing.T) node.Node) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { tc.run(newFixture(t, newNode(t))) })
	}
	for _, tc := range rwCases {
		t.Run(tc.name, func(t *testing.T) { runRW(newFixture(t, newNode(t)), tc.run) })
	}
}

// cases are the contract's cases for a mutex's node.
var cases = []struct {
	name string
	run  func(f *fixture)
}{
	{"AcquireFreeKey", acquireFreeKey},
	{"AcquireHeldKeyReportsHolder", acquireHeldKeyReportsHolder},
	{"AcquireResendKeepsFence", acquireResendKeepsFence},
	{"FenceCountsAcquisitions", fenceCountsAcquisitions},
	{"ReleaseOnlyOwnToken", releaseOnlyOwnToken},
	{"TombstoneRefusesLateAcquire", tombstoneRefusesLateAcquire},
	{"TombstoneRefusesLateReassert", tombstoneRefusesLateReassert},
	{"ReleaseOfUnknownKeyLeavesTombstone", releaseOfUnknownKeyLeavesTombstone},
	{"ReleaseWithoutTombstone", releaseWithoutTombstone},
	{"TombstoneExpires", tombstoneExpires},
	{"KeyExpires", keyExpires},
	{"ExtendBatch", extendBatch},
	{"ExtendResend", extendResend},
	{"ExtendEmptyBatch", extendEmptyBatch},
	{"ExtendManyInOrder", extendManyInOrder},
	{"RaiseFence", raiseFence},
	{"InspectFreeKey", inspectFreeKey},
	{"CounterExpires", counterExpires},
	{"RetentionResetsOnAcquisition", retentionResetsOnAcquisition},
	{"ExtendKeepsCounterAlive", extendKeepsCounterAlive},
	{"SeedWithinSkewUsed", seedWithinSkewUsed},
	{"SeedFarOffIgnored", seedFarOffIgnored},
	{"SeedBehindClockIgnored", seedBehindClockIgnored},
	{"ExistingCounterIgnoresSeed", existingCounterIgnoresSeed},
	{"LargeCounterCountsExactly", largeCounterCountsExactly},
	{"IdentifyStable", identifyStable},
	{"Notifications", notifications},
	{"CancelledContext", cancelledContext},
	{"ConcurrentAcquireOneWinner", concurrentAcquireOneWinner},
	{"InvalidArguments", invalidArguments},
	{"OwnerRecorded", ownerRecorded},
	{"ReassertCarriesOwner", reassertCarriesOwner},
	{"TrailReportsExpiredHolder", trailReportsExpiredHolder},
	{"TrailRecordsSettledFence", trailRecordsSettledFence},
	{"ForceRelease", forceRelease},
	{"ForceReleaseAnnounced", forceReleaseAnnounced},
	{"ScanMatches", scanMatches},
	{"InvalidOwnerArguments", invalidOwnerArguments},
	{"AcquireReportsStanding", acquireReportsStanding},
	{"LearnPromotesOnlyItsRecord", learnPromotesOnlyItsRecord},
	{"LearnerSitsOutTheHold", learnerSitsOutTheHold},
	{"LearnInvalidArguments", learnInvalidArguments},
	{"HandOverTakesTheKey", handOverTakesTheKey},
	{"ReleaseAnnouncesTheHandingToken", releaseAnnouncesTheHandingToken},
}

// Long is a TTL, tombstone or retention that never runs out during a test.
const long = time.Minute

// hangGuard bounds every wait for an expiry: far above any real delay, so
// that only a node that never expires the entry fails.
const hangGuard = 30 * time.Second

var seq atomic.Int64

// fixture fails the test on any node error, so each check reads as one line.
type fixture struct {
	t *testing.T
	n fullNode
}

// fullNode is a node with every optional capability the suite checks.
type fullNode interface {
	node.Node
	node.Inspector
	node.ForceReleaser
	node.Subscriber
}

// newFixture runs the checks of n; those of a capability n lacks are
// skipped where they first need it.
func newFixture(t *testing.T, n node.Node) *fixture {
	f, ok := n.(fullNode)
	if !ok {
		f = partialNode{Node: n, t: t}
	}
	return &fixture{t: t, n: f}
}

// partialNode is a node without every optional capability: a check that
// calls a missing one is skipped.
type partialNode struct {
	node.Node
	t *testing.T
}

func (p partialNode) Inspect(ctx context.Context, name string) (node.Holding, error) {
	in, ok := p.Node.(node.Inspector)
	if !ok {
		p.t.Skipf("%s: no node.Inspector", p.Name())
	}
	return in.Inspect(ctx, name)
}

func (p partialNode) Scan(ctx context.Context, a node.ScanArgs) (node.ScanPage, error) {
	in, ok := p.Node.(node.Inspector)
	if !ok {
		p.t.Skipf("%s: no node.Inspector", p.Name())
	}
	return in.Scan(ctx, a)
}

func (p partialNode) ForceRelease(ctx context.Context, a node.ForceReleaseArgs) (bool, error) {
	fr, ok := p.Node.(node.ForceReleaser)
	if !ok {
		p.t.Skipf("%s: no node.ForceReleaser", p.Name())
	}
	return fr.ForceRelease(ctx, a)
}

func (p partialNode) Subscribe(ctx context.Context, channel string, onRelease func(name, releaseID string), onState func(up bool, err error)) (func(), error) {
	sub, ok := p.Node.(node.Subscriber)
	if !ok {
		p.t.Skipf("%s: no node.Subscriber", p.Name())
	}
	return sub.Subscribe(ctx, channel, onRelease, onState)
}

// name is a lock name of its own, in braces for Redis Cluster.
func (f *fixture) name() string {
	base := strings.NewReplacer("/", ".", "{", "(", "}", ")").Replace(f.t.Name())
	return fmt.Sprintf("nodetest:{%s.%d.%d}", base, time.Now().UnixNano(), seq.Add(1))
}

func (f *fixture) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	f.t.Cleanup(cancel)
	return ctx
}

func (f *fixture) must(op string, err error) {
	f.t.Helper()
	if err != nil {
		f.t.Fatalf("%s: %v", op, err)
	}
}

func (f *fixture) acquire(name, token string, ttl time.Duration) node.AcquireReply {
	f.t.Helper()
	return f.acquireArgs(node.AcquireArgs{Name: name, Token: token, TTL: ttl, Retention: long})
}

func (f *fixture) acquireArgs(a node.AcquireArgs) node.AcquireReply {
	f.t.Helper()
	r, err := f.n.Acquire(f.ctx(), a)
	f.must("acquire", err)
	return r
}

func (f *fixture) extend(ops ...node.ExtendArgs) []node.ExtendResult {
	f.t.Helper()
	res, err := f.n.Extend(f.ctx(), ops)
	f.must("extend", err)
	if len(res) != len(ops) {
		f.t.Fatalf("extend of %d ops returned %d results", len(ops), len(res))
	}
	return res
}

func (f *fixture) release(name, token string, tombstone time.Duration) bool {
	f.t.Helper()
	ok, err := f.n.Release(f.ctx(), node.ReleaseArgs{Name: name, Token: token, Tombstone: tombstone})
	f.must("release", err)
	return ok
}

func (f *fixture) raise(name, token string, fence uint64) bool {
	f.t.Helper()
	ok, err := f.n.RaiseFence(f.ctx(), name, token, fence, long)
	f.must("raise fence", err)
	return ok
}

func (f *fixture) inspect(name string) node.Holding {
	f.t.Helper()
	h, err := f.n.Inspect(f.ctx(), name)
	f.must("inspect", err)
	return h
}

// eventually polls cond until it holds; only a hang fails it.
func (f *fixture) eventually(what string, cond func() bool) {
	f.t.Helper()
	deadline := time.Now().Add(hangGuard)
	for !cond() {
		if time.Now().After(deadline) {
			f.t.Fatalf("still waiting after %s for %s", hangGuard, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func ext(name, token string, ttl time.Duration, fence uint64) node.ExtendArgs {
	return node.ExtendArgs{Name: name, Token: token, TTL: ttl, Fence: fence, Retention: long}
}

func nowMicros() uint64 { return uint64(time.Now().UnixMicro()) }

func acquireFreeKey(f *fixture) {
	name := f.name()
	r := f.acquire(name, "a", long)
	if !r.Acquired || r.Fence == 0 || r.HolderTTL != 0 {
		f.t.Fatalf("acquire of a free key = %+v, want acquired with a fence", r)
	}
	h := f.inspect(name)
	if h.Token != "a" || h.Fence != r.Fence || h.TTL <= 0 || h.TTL > long {
		f.t.Fatalf("inspect = %+v, want token a, fence %d, ttl in (0, %s]", h, r.Fence, long)
	}
}

func acquireHeldKeyReportsHolder(f *fixture) {
	name := f.name()
	first := f.acquire(name, "a", long)
	r := f.acquire(name, "b", time.Second)
	if r.Acquired || r.HolderTTL <= 0 || r.HolderTTL > long || r.Holder != node.ReleaseID("a") {
		f.t.Fatalf("acquire of a held key = %+v, want refused with the holder's ttl in (0, %s] and release id %s", r, long, node.ReleaseID("a"))
	}
	if h := f.inspect(name); h.Token != "a" || h.Fence != first.Fence {
		f.t.Fatalf("refused acquire changed the key: %+v", h)
	}
}

func acquireResendKeepsFence(f *fixture) {
	name := f.name()
	first := f.acquire(name, "a", time.Second)
	again := f.acquire(name, "a", long)
	if !again.Acquired || again.Fence != first.Fence {
		f.t.Fatalf("resent acquire = %+v, want acquired with the same fence %d", again, first.Fence)
	}
	if h := f.inspect(name); h.TTL <= long/2 {
		f.t.Fatalf("resent acquire did not refresh the ttl: %s", h.TTL)
	}
}

func fenceCountsAcquisitions(f *fixture) {
	name := f.name()
	var last uint64
	for i := range 3 {
		r := f.acquire(name, fmt.Sprint("tok", i), long)
		if !r.Acquired || (i > 0 && r.Fence != last+1) {
			f.t.Fatalf("acquisition %d = %+v, want fence %d", i, r, last+1)
		}
		last = r.Fence
		if !f.release(name, fmt.Sprint("tok", i), long) {
			f.t.Fatalf("release %d failed", i)
		}
	}
	if h := f.inspect(name); h.Token != "" || h.Fence != last {
		f.t.Fatalf("after release: %+v, want free with fence %d", h, last)
	}
}

func releaseOnlyOwnToken(f *fixture) {
	name := f.name()
	f.acquire(name, "owner", long)
	if f.release(name, "intruder", long) {
		f.t.Fatal("release with another token reported success")
	}
	if h := f.inspect(name); h.Token != "owner" {
		f.t.Fatalf("release with another token deleted the key: %+v", h)
	}
	if !f.release(name, "owner", long) {
		f.t.Fatal("the owner's release failed")
	}
	if f.release(name, "owner", long) {
		f.t.Fatal("a resent release reported success")
	}
	if h := f.inspect(name); h.Token != "" {
		f.t.Fatalf("released key still held: %+v", h)
	}
}

// An acquire of a released token that reaches the node late (still in
// flight when Release returned) must not take the key again.
func tombstoneRefusesLateAcquire(f *fixture) {
	name := f.name()
	first := f.acquire(name, "a", long)
	f.release(name, "a", long)
	if r := f.acquire(name, "a", long); r.Acquired || r.HolderTTL != 0 {
		f.t.Fatalf("late acquire of a released token = %+v, want refused with HolderTTL 0", r)
	}
	if h := f.inspect(name); h.Token != "" || h.Fence != first.Fence {
		f.t.Fatalf("late acquire changed the key: %+v", h)
	}
	if r := f.acquire(name, "b", long); !r.Acquired || r.Fence != first.Fence+1 {
		f.t.Fatalf("another token's acquire = %+v, want acquired with fence %d", r, first.Fence+1)
	}
}

// Likewise a late extend must not re-assert a released lock.
func tombstoneRefusesLateReassert(f *fixture) {
	name := f.name()
	r := f.acquire(name, "a", long)
	f.release(name, "a", long)
	if res := f.extend(ext(name, "a", long, r.Fence+100)); res[0] != node.NotHeld {
		f.t.Fatalf("late extend of a released token = %v, want NotHeld", res[0])
	}
	if h := f.inspect(name); h.Token != "" || h.Fence != r.Fence {
		f.t.Fatalf("late extend changed the key: %+v", h)
	}
}

// A release that reaches a node its acquire never reached (lost, or still
// in flight) leaves the tombstone that refuses the acquire when it lands.
func releaseOfUnknownKeyLeavesTombstone(f *fixture) {
	name := f.name()
	if f.release(name, "a", long) {
		f.t.Fatal("release of a key never acquired reported success")
	}
	if r := f.acquire(name, "a", long); r.Acquired {
		f.t.Fatalf("acquire after its release = %+v, want refused", r)
	}
	if res := f.extend(ext(name, "a", long, 7)); res[0] != node.NotHeld {
		f.t.Fatalf("extend after its release = %v, want NotHeld", res[0])
	}
	h := f.inspect(name)
	if !empty(h) {
		f.t.Fatalf("refused requests left %+v", h)
	}
	if r := f.acquire(name, "b", long); !r.Acquired {
		f.t.Fatalf("another token's acquire = %+v, want acquired", r)
	}
}

func releaseWithoutTombstone(f *fixture) {
	name := f.name()
	f.acquire(name, "a", long)
	if !f.release(name, "a", 0) {
		f.t.Fatal("release failed")
	}
	if r := f.acquire(name, "a", long); !r.Acquired {
		f.t.Fatalf("acquire after a release without tombstone = %+v, want acquired", r)
	}
}

func tombstoneExpires(f *fixture) {
	name := f.name()
	f.acquire(name, "a", long)
	f.release(name, "a", 50*time.Millisecond)
	f.eventually("the tombstone to expire", func() bool { return f.acquire(name, "a", long).Acquired })
}

func keyExpires(f *fixture) {
	name := f.name()
	f.acquire(name, "a", 50*time.Millisecond)
	f.eventually("the key to expire", func() bool { return f.inspect(name).Token == "" })
	if r := f.acquire(name, "b", long); !r.Acquired {
		f.t.Fatalf("acquire of an expired key = %+v", r)
	}
}

func extendBatch(f *fixture) {
	own, other, missing, gone := f.name(), f.name(), f.name(), f.name()
	r := f.acquire(own, "a", time.Second)
	f.acquire(other, "x", long)
	f.acquire(gone, "a", long)
	f.release(gone, "a", long)
	res := f.extend(
		ext(own, "a", long, r.Fence),
		ext(other, "a", long, 0),
		ext(missing, "a", long, 42),
		ext(gone, "a", long, 42),
	)
	want := []node.ExtendResult{node.Extended, node.NotHeld, node.Reasserted, node.NotHeld}
	for i := range want {
		if res[i] != want[i] {
			f.t.Fatalf("extend results = %v, want %v", res, want)
		}
	}
	if h := f.inspect(own); h.Token != "a" || h.TTL <= long/2 || h.Fence != r.Fence {
		f.t.Fatalf("extended key = %+v, want token a, fence %d and its ttl reset", h, r.Fence)
	}
	if h := f.inspect(other); h.Token != "x" {
		f.t.Fatalf("extend of another's key changed it: %+v", h)
	}
	if h := f.inspect(missing); h.Token != "a" || h.Fence < 42 || h.TTL <= long/2 {
		f.t.Fatalf("re-asserted key = %+v, want token a, fence >= 42", h)
	}
	if r := f.acquire(missing, "b", long); r.Acquired {
		f.t.Fatal("a re-asserted key was free for another token")
	}
	f.release(missing, "a", long)
	if r := f.acquire(missing, "b", long); !r.Acquired || r.Fence <= 42 {
		f.t.Fatalf("acquire after a re-asserted lock = %+v, want a fence above 42", r)
	}
}

func extendResend(f *fixture) {
	name, missing := f.name(), f.name()
	r := f.acquire(name, "a", long)
	for i := range 2 {
		res := f.extend(ext(name, "a", long, r.Fence), ext(missing, "a", long, 5))
		want := node.Reasserted
		if i > 0 {
			want = node.Extended // the resend finds the key it set
		}
		if res[0] != node.Extended || res[1] != want {
			f.t.Fatalf("extend %d = %v, want [extended %v]", i, res, want)
		}
	}
	if h := f.inspect(name); h.Fence != r.Fence {
		f.t.Fatalf("extend changed the fence: %+v, want %d", h, r.Fence)
	}
}

func extendEmptyBatch(f *fixture) {
	res, err := f.n.Extend(f.ctx(), nil)
	if err != nil || len(res) != 0 {
		f.t.Fatalf("extend of no ops = %v, %v", res, err)
	}
}

func extendManyInOrder(f *fixture) {
	var ops []node.ExtendArgs
	var want []node.ExtendResult
	for i := range 64 {
		name := f.name()
		if i%2 == 0 {
			f.acquire(name, "a", long)
			want = append(want, node.Extended)
		} else {
			f.acquire(name, "other", long)
			want = append(want, node.NotHeld)
		}
		ops = append(ops, ext(name, "a", long, 0))
	}
	res := f.extend(ops...)
	for i := range want {
		if res[i] != want[i] {
			f.t.Fatalf("result %d = %v, want %v", i, res[i], want[i])
		}
	}
}

func raiseFence(f *fixture) {
	name := f.name()
	start := f.acquire(name, "a", long).Fence
	if !f.raise(name, "a", start+10) {
		f.t.Fatal("RaiseFence did not see our token")
	}
	if f.raise(name, "b", start+5) {
		f.t.Fatal("RaiseFence reported another token as held")
	}
	if h := f.inspect(name); h.Fence != start+10 || h.Token != "a" {
		f.t.Fatalf("after raises: %+v, want fence %d (raised, never lowered)", h, start+10)
	}
	f.release(name, "a", long)
	if r := f.acquire(name, "c", long); r.Fence != start+11 {
		f.t.Fatalf("next acquisition's fence = %d, want %d", r.Fence, start+11)
	}
	// A missing counter is created at the raised value.
	other := f.name()
	if f.raise(other, "a", 99) {
		f.t.Fatal("RaiseFence reported a free key as held")
	}
	if h := f.inspect(other); h.Fence != 99 || h.Token != "" {
		f.t.Fatalf("raise on a free key: %+v, want fence 99", h)
	}
}

func inspectFreeKey(f *fixture) {
	if h := f.inspect(f.name()); !empty(h) {
		f.t.Fatalf("a free key inspected as %+v", h)
	}
}

func counterExpires(f *fixture) {
	name := f.name()
	// (A node may keep the counter as long as the lock's TTL, when longer.)
	r := f.acquireArgs(node.AcquireArgs{Name: name, Token: "a", TTL: 50 * time.Millisecond, Retention: 50 * time.Millisecond})
	f.release(name, "a", 0)
	f.eventually("the counter to expire", func() bool { return f.inspect(name).Fence == 0 })
	// A new counter starts from the seed again, not from the old value.
	seed := r.Fence + 1000
	if seed < nowMicros() {
		seed = nowMicros()
	}
	r2 := f.acquireArgs(node.AcquireArgs{Name: name, Token: "b", TTL: long, Seed: seed, Retention: long})
	if !r2.Acquired || r2.Fence == r.Fence+1 {
		f.t.Fatalf("acquire after the counter expired = %+v: the old counter %d went on", r2, r.Fence)
	}
}

func retentionResetsOnAcquisition(f *fixture) {
	name := f.name()
	short := 100 * time.Millisecond
	f.acquireArgs(node.AcquireArgs{Name: name, Token: "a", TTL: long, Retention: short})
	f.release(name, "a", 0)
	r := f.acquireArgs(node.AcquireArgs{Name: name, Token: "b", TTL: long, Retention: long})
	f.release(name, "b", 0)
	time.Sleep(3 * short) // past the first retention, however slow the machine
	if h := f.inspect(name); h.Fence != r.Fence {
		f.t.Fatalf("counter = %d, want %d: the second acquisition did not reset its retention", h.Fence, r.Fence)
	}
}

// A lock held (extended) longer than its acquisition's retention keeps its
// counter: the extension resets the retention.
func extendKeepsCounterAlive(f *fixture) {
	name := f.name()
	short := 100 * time.Millisecond
	r := f.acquireArgs(node.AcquireArgs{Name: name, Token: "a", TTL: long, Retention: short})
	f.extend(ext(name, "a", long, r.Fence))
	time.Sleep(3 * short)
	if h := f.inspect(name); h.Fence != r.Fence {
		f.t.Fatalf("counter = %d, want %d: the extension did not reset its retention", h.Fence, r.Fence)
	}
}

// The seed starts a missing counter exactly. The seed is the test's clock
// plus half of MaxSeedSkew, within the skew of the node's unless a request
// takes longer than that to arrive: such a try is repeated, while a node
// that ignores seeds fails every try.
func seedWithinSkewUsed(f *fixture) {
	var got []string
	for range 50 {
		name := f.name()
		seed := nowMicros() + uint64(node.MaxSeedSkew/2/time.Microsecond)
		r := f.acquireArgs(node.AcquireArgs{Name: name, Token: "a", TTL: long, Seed: seed, Retention: long})
		if r.Fence == seed+1 {
			return
		}
		got = append(got, fmt.Sprintf("seed %d: fence %d", seed, r.Fence))
	}
	f.t.Fatalf("a seed within MaxSeedSkew did not start the counter: %v", got)
}

// A seed behind the server's clock, even by less than MaxSeedSkew, does
// not start a counter: counters never start below the clock.
func seedBehindClockIgnored(f *fixture) {
	before := nowMicros()
	seed := before - uint64(node.MaxSeedSkew/2/time.Microsecond)
	r := f.acquireArgs(node.AcquireArgs{Name: f.name(), Token: "a", TTL: long, Seed: seed, Retention: long})
	if r.Fence <= before {
		f.t.Fatalf("fence %d from a seed %s behind (%d): want at least the server's clock (%d)", r.Fence, node.MaxSeedSkew/2, seed, before)
	}
}

func seedFarOffIgnored(f *fixture) {
	skew := uint64(60 * time.Second / time.Microsecond)
	margin := uint64(30 * time.Second / time.Microsecond)
	before := nowMicros()
	low := f.acquireArgs(node.AcquireArgs{Name: f.name(), Token: "a", TTL: long, Seed: before - skew, Retention: long})
	if low.Fence < before-skew+margin {
		f.t.Fatalf("fence %d from a seed 60s behind (%d): want the server's clock (about %d)", low.Fence, before-skew, before)
	}
	now := nowMicros()
	high := f.acquireArgs(node.AcquireArgs{Name: f.name(), Token: "a", TTL: long, Seed: now + skew, Retention: long})
	if high.Fence > now+skew-margin {
		f.t.Fatalf("fence %d from a seed 60s ahead (%d): want the server's clock (about %d)", high.Fence, now+skew, now)
	}
	zero := f.acquireArgs(node.AcquireArgs{Name: f.name(), Token: "a", TTL: long, Retention: long})
	if zero.Fence < before-margin {
		f.t.Fatalf("fence %d without a seed: want the server's clock (about %d)", zero.Fence, before)
	}
}

func existingCounterIgnoresSeed(f *fixture) {
	name := f.name()
	first := f.acquire(name, "a", long)
	f.release(name, "a", long)
	r := f.acquireArgs(node.AcquireArgs{Name: name, Token: "b", TTL: long, Seed: nowMicros(), Retention: long})
	if r.Fence != first.Fence+1 {
		f.t.Fatalf("an existing counter took a seed: fence %d, want %d", r.Fence, first.Fence+1)
	}
}

func identifyStable(f *fixture) {
	a, err := f.n.Identify(f.ctx())
	f.must("identify", err)
	b, err := f.n.Identify(f.ctx())
	f.must("identify", err)
	if a.ID == "" || a.Eviction == "" || a != b {
		f.t.Fatalf("identify = %+v then %+v, want one non-empty identity", a, b)
	}
}

type recorder struct {
	mu       sync.Mutex
	releases []string // "releaseID name"
	up       bool
}

func (r *recorder) onRelease(name, id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.releases = append(r.releases, id+" "+name)
}

func (r *recorder) onState(up bool, _ error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.up = up
}

func (r *recorder) snapshot() (bool, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.up, append([]string(nil), r.releases...)
}

// Each release that deleted a key a waiter found held (an Acquire with
// Waiter) is announced once, an extension and a raise in between or not; a
// release nobody waited for (tried without Waiter, or not at all), a
// resent release, another token's release and a release without channel
// announce nothing. Waiters' attempts change nothing else of the holding.
// Since one subscription delivers in order, a marker released after them
// shows that nothing else came.
func notifications(f *fixture) {
	channel, rec, stop := f.subscribed("releases")

	rel := func(name, token, ch string) bool {
		ok, err := f.n.Release(f.ctx(), node.ReleaseArgs{Name: name, Token: token, Tombstone: long, Channel: ch})
		f.must("release", err)
		return ok
	}
	wait := func(name string) {
		if r := f.acquireArgs(node.AcquireArgs{Name: name, Token: "waiter", TTL: long, Waiter: true}); r.Acquired {
			f.t.Fatalf("waiter acquired held %s", name)
		}
	}
	name, quiet, unwaited, free, marker := f.name(), f.name(), f.name(), f.name(), f.name()
	f.acquire(name, "a", long)
	f.acquire(quiet, "q", long)
	f.acquire(unwaited, "u", long)
	f.acquire(marker, "m", long)
	wait(name)
	wait(name) // a second attempt changes nothing either
	if r := f.extend(node.ExtendArgs{Name: name, Token: "a", TTL: long}); r[0] != node.Extended {
		f.t.Fatalf("extend of a waited-for key = %v", r)
	}
	f.raise(name, "a", 1)
	wait(quiet)
	wait(marker)
	f.acquire(free, "f", long) // nobody tries it
	if r := f.acquireArgs(node.AcquireArgs{Name: unwaited, Token: "trier", TTL: long}); r.Acquired {
		f.t.Fatal("acquired a held key")
	}
	if h := f.inspect(name); h.Token != "a" || h.Owner != "" || !h.AcquiredAt.IsZero() {
		f.t.Fatalf("inspect of a waited-for key = %+v, want token a as acquired", h)
	}
	releasesAnswer(f, rel, channel, name, quiet, unwaited)
	rel(marker, "m", channel)
	if !rel(free, "f", channel) {
		f.t.Fatal("release of a key nobody tried failed")
	}
	want := []string{node.ReleaseID("a") + " " + name, node.ReleaseID("m") + " " + marker}
	f.eventually("the marker's announcement", func() bool { _, got := rec.snapshot(); return len(got) >= len(want) })
	if _, got := rec.snapshot(); fmt.Sprint(got) != fmt.Sprint(want) {
		f.t.Fatalf("announcements = %q, want %q", got, want)
	}
	stop()
	stop() // may be called more than once
	f.acquire(marker, "m2", long)
	wait(marker)
	rel(marker, "m2", channel)
	if _, got := rec.snapshot(); len(got) != len(want) {
		f.t.Fatalf("announcement after stop: %q", got)
	}
}

// subscribed subscribes to a fresh channel named after group, and waits
// until the subscription is up; it skips the check on a node that cannot
// subscribe. The subscription stops when the check ends, or at stop,
// which may be called more than once.
func (f *fixture) subscribed(group string) (channel string, rec *recorder, stop func()) {
	channel = fmt.Sprintf("nodetest:{%s}.%d.%d", group, time.Now().UnixNano(), seq.Add(1))
	rec = &recorder{}
	stop, err := f.n.Subscribe(f.ctx(), channel, rec.onRelease, rec.onState)
	if errors.Is(err, node.ErrNotificationsUnsupported) {
		f.t.Skip("node cannot subscribe")
	}
	f.must("subscribe", err)
	f.t.Cleanup(stop)
	f.eventually("the subscription to be up", func() bool { up, _ := rec.snapshot(); return up })
	return channel, rec, stop
}

// releasesAnswer checks what releases answer on a node with waiters: only
// the holder's first release of name succeeds; quiet (no channel) and
// unwaited are released.
func releasesAnswer(f *fixture, rel func(name, token, ch string) bool, channel, name, quiet, unwaited string) {
	if rel(name, "intruder", channel) {
		f.t.Fatal("release with another token reported success")
	}
	if !rel(name, "a", channel) {
		f.t.Fatal("release failed")
	}
	if rel(name, "a", channel) {
		f.t.Fatal("resent release reported success")
	}
	if !rel(quiet, "q", "") {
		f.t.Fatal("release without channel failed")
	}
	if !rel(unwaited, "u", channel) {
		f.t.Fatal("release of a key nobody waited for failed")
	}
}

// A counter raised above 2^53 (where a double no longer counts by one)
// still grows by exactly one per acquisition.
func largeCounterCountsExactly(f *fixture) {
	name := f.name()
	const big = 1<<60 + 5
	f.raise(name, "nobody", big)
	for i := range uint64(2) {
		r := f.acquire(name, fmt.Sprintf("t%d", i), long)
		if want := big + 1 + i; !r.Acquired || r.Fence != want {
			f.t.Fatalf("acquire %d after raising the counter to %d = %+v, want fence %d", i, uint64(big), r, want)
		}
		f.release(name, fmt.Sprintf("t%d", i), long)
	}
}

func cancelledContext(f *fixture) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	name := f.name()
	if _, err := f.n.Acquire(ctx, node.AcquireArgs{Name: name, Token: "a", TTL: long}); err == nil {
		f.t.Fatal("acquire with a cancelled context succeeded")
	}
	if h := f.inspect(name); !empty(h) {
		f.t.Fatalf("acquire with a cancelled context left %+v", h)
	}
}

func concurrentAcquireOneWinner(f *fixture) {
	name := f.name()
	var wins atomic.Int32
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			r, err := f.n.Acquire(f.ctx(), node.AcquireArgs{Name: name, Token: fmt.Sprint("tok", i), TTL: long, Retention: long})
			if err != nil {
				f.t.Error(err)
				return
			}
			if r.Acquired {
				wins.Add(1)
			}
		})
	}
	wg.Wait()
	if w := wins.Load(); w != 1 {
		f.t.Fatalf("%d of 16 concurrent acquirers won, want exactly 1", w)
	}
}

// Bad input is a typed error, never a panic or a half-done call.
func invalidArguments(f *fixture) {
	name := f.name()
	ctx := f.ctx()
	check := func(what string, err error) {
		f.t.Helper()
		if !errors.Is(err, node.ErrInvalidArgument) {
			f.t.Errorf("%s: err = %v, want ErrInvalidArgument", what, err)
		}
	}
	_, err := f.n.Acquire(ctx, node.AcquireArgs{Token: "a", TTL: time.Second})
	check("acquire without name", err)
	_, err = f.n.Acquire(ctx, node.AcquireArgs{Name: name, TTL: time.Second})
	check("acquire without token", err)
	_, err = f.n.Acquire(ctx, node.AcquireArgs{Name: name, Token: "a"})
	check("acquire without ttl", err)
	_, err = f.n.Acquire(ctx, node.AcquireArgs{Name: name, Token: "a", TTL: time.Second, Retention: -1})
	check("acquire with negative retention", err)
	_, err = f.n.Extend(ctx, []node.ExtendArgs{ext(name, "a", time.Second, 0), ext(name, "a", -time.Second, 0)})
	check("extend with a negative ttl", err)
	_, err = f.n.Extend(ctx, []node.ExtendArgs{ext(name, "a", time.Second, 1<<63)})
	check("extend with a fence above MaxInt64", err)
	_, err = f.n.Release(ctx, node.ReleaseArgs{Name: name})
	check("release without token", err)
	_, err = f.n.RaiseFence(ctx, "", "a", 1, time.Second)
	check("raise without name", err)
	_, err = f.n.Inspect(ctx, "")
	check("inspect without name", err)
	if h := f.inspect(name); !empty(h) {
		f.t.Fatalf("rejected calls left %+v", h)
	}
}
