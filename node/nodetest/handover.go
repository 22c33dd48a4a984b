package nodetest

import (
	"errors"
	"fmt"
	"time"

	"github.com/quorumlock/quorumlock/node"
)

// handOverTakesTheKey: an acquisition From the holder's token takes the key
// as a free one (a larger fence, no previous holder); From another token,
// or on a key held by a third, it changes nothing.
func handOverTakesTheKey(f *fixture) {
	name := f.name()
	first := f.acquire(name, "a", long)
	if r := f.acquireArgs(node.AcquireArgs{Name: name, Token: "c", TTL: long, From: "x"}); r.Acquired {
		f.t.Fatalf("acquisition from a token that does not hold the key = %+v, want refused", r)
	}
	r := f.acquireArgs(node.AcquireArgs{Name: name, Token: "b", TTL: long, From: "a"})
	if !r.Acquired || r.Fence <= first.Fence || r.Previous.Token != "" {
		f.t.Fatalf("hand-over from the holder = %+v, want acquired with a fence above %d and no previous holder", r, first.Fence)
	}
	if h := f.inspect(name); h.Token != "b" || h.Fence != r.Fence {
		f.t.Fatalf("after the hand-over: %+v, want b with fence %d", h, r.Fence)
	}
	if again := f.acquireArgs(node.AcquireArgs{Name: name, Token: "b", TTL: long, From: "a"}); !again.Acquired || again.Fence != r.Fence {
		f.t.Fatalf("resent hand-over = %+v, want acquired with the same fence %d", again, r.Fence)
	}
	if f.release(name, "a", 0) {
		f.t.Fatal("the handing token released the key it handed over")
	}
	if r := f.acquireArgs(node.AcquireArgs{Name: name, Token: "c", TTL: long, From: "a"}); r.Acquired {
		f.t.Fatalf("a second hand-over from the old token = %+v, want refused", r)
	}
	// Expired: taken like a free key, and the handing token is not
	// reported as a previous holder.
	other := f.name()
	f.acquire(other, "d", 50*time.Millisecond)
	f.expired(other)
	if r := f.acquireArgs(node.AcquireArgs{Name: other, Token: "e", TTL: long, From: "d"}); !r.Acquired || r.Previous.Token != "" {
		f.t.Fatalf("hand-over of an expired hold = %+v, want acquired with no previous holder", r)
	}
	for _, a := range []node.AcquireArgs{{Name: name, Token: "b", TTL: long, From: "b"}, {Name: name, Token: "b", TTL: long, From: "bad token"}} {
		if _, err := f.n.Acquire(f.ctx(), a); !errors.Is(err, node.ErrInvalidArgument) {
			f.t.Fatalf("acquire from %q: %v, want ErrInvalidArgument", a.From, err)
		}
	}
}

// releaseAnnouncesTheHandingToken: the release of a key handed over in a
// row (a to b to c) that a waiter found held before the hand-overs
// announces its own token's release id and those of the tokens that handed
// it over (ReleaseArgs.From, newest first); From with an empty token or the
// releasing token itself is refused.
func releaseAnnouncesTheHandingToken(f *fixture) {
	channel, rec, _ := f.subscribed("releases")
	name := f.name()
	f.acquire(name, "a", long)
	if r := f.acquireArgs(node.AcquireArgs{Name: name, Token: "w", TTL: long, Waiter: true}); r.Acquired {
		f.t.Fatal("a waiter acquired a held key")
	}
	f.acquireArgs(node.AcquireArgs{Name: name, Token: "b", TTL: long, From: "a"})
	if r := f.acquireArgs(node.AcquireArgs{Name: name, Token: "c", TTL: long, From: "b"}); !r.Acquired {
		f.t.Fatal("the second hand-over in a row failed")
	}
	for _, from := range []string{"b  a", "b c", " b"} {
		if _, err := f.n.Release(f.ctx(), node.ReleaseArgs{Name: name, Token: "c", Channel: channel, From: from}); !errors.Is(err, node.ErrInvalidArgument) {
			f.t.Fatalf("release from %q: %v, want ErrInvalidArgument", from, err)
		}
	}
	ok, err := f.n.Release(f.ctx(), node.ReleaseArgs{Name: name, Token: "c", Channel: channel, From: "b a"})
	f.must("release", err)
	if !ok {
		f.t.Fatal("release of the handed-over key failed")
	}
	want := []string{node.ReleaseID("c") + " " + name, node.ReleaseID("b") + " " + name, node.ReleaseID("a") + " " + name}
	f.eventually("every announcement", func() bool { _, got := rec.snapshot(); return len(got) >= len(want) })
	if _, got := rec.snapshot(); fmt.Sprint(got) != fmt.Sprint(want) {
		f.t.Fatalf("announcements = %q, want %q", got, want)
	}
}
