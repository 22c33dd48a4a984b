package nodetest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/fakeresp"
	"github.com/quorumlock/quorumlock/internal/guard"
	"github.com/quorumlock/quorumlock/internal/respguard"
	"github.com/quorumlock/quorumlock/node"
)

// FuzzReplies drives every operation of a node with arbitrary bytes as the
// server's reply: dial makes the node under test on a fake server at addr
// (closing what it opens in t's cleanup), and each command but the
// connection handshake gets the fuzzed bytes, after which the server hangs
// up. Every operation must return, a value or an error; a panic fails,
// unless clientPanic says it happened inside the client library (stack is
// the panic's), where the quorum client's guard makes it a node error.
// With firstOnly, the server sends only the first reply in the bytes (for
// clients that cannot take a reply nobody asked for). The seeds are the
// bad answers of fakeresp and a few good ones.
func FuzzReplies(f *testing.F, dial func(t testing.TB, addr string) node.Node, clientPanic func(stack string) bool, firstOnly bool) {
	for _, fault := range fakeresp.Faults {
		f.Add(fault.Reply)
	}
	for _, good := range goodReplies {
		f.Add([]byte(good))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if firstOnly {
			data = respguard.FirstReply(data)
		}
		srv, err := fakeresp.Start(fakeresp.Lying("", fakeresp.Fault{Reply: data, Hangup: true}))
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = srv.Close() }()
		n := dial(t, srv.Addr())
		for _, op := range operations(n) {
			// A hang guard: every call must end on the server's hangup.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			err := guard.Run(func() { _ = op.call(ctx) })
			hung := ctx.Err() != nil
			cancel()
			var pe *guard.PanicError
			if errors.As(err, &pe) && !clientPanic(string(pe.Stack)) {
				t.Fatalf("%s panicked on reply %q: %v\n%s", op.name, data, pe.Value, pe.Stack)
			}
			if hung {
				t.Fatalf("%s did not end within its hang guard on reply %q", op.name, data)
			}
		}
	})
}

// goodReplies are well-formed replies of the shapes the scripts return.
var goodReplies = []string{
	":1\r\n", ":0\r\n", "$-1\r\n", "*0\r\n",
	"*3\r\n:1\r\n:17\r\n$0\r\n\r\n",
	"*2\r\n$1\r\n0\r\n*1\r\n$6\r\nlock:a\r\n",
	"*4\r\n$5\r\ntoken\r\n:1000\r\n:7\r\n$5\r\nowner\r\n",
	"$60\r\n# Server\r\nrun_id:abc\r\n# Memory\r\nmaxmemory_policy:noeviction\r\n\r\n",
}

type operation struct {
	name string
	call func(ctx context.Context) error
}

// operations are one call of each operation of n that reads a reply.
func operations(n node.Node) []operation {
	const name, token = "lock:{fuzz}", "0123456789abcdef0123456789abcdef"
	acq := node.AcquireArgs{Name: name, Token: token, TTL: time.Second, Seed: 1, Owner: "o", At: time.Unix(1, 0), Waiter: true}
	ext := []node.ExtendArgs{{Name: name, Token: token, TTL: time.Second, Fence: 3}, {Name: name + "2", Token: token, TTL: time.Second}}
	rel := node.ReleaseArgs{Name: name, Token: token, Tombstone: time.Second, Channel: "c"}
	ops := []operation{
		{"identify", func(ctx context.Context) error { _, err := n.Identify(ctx); return err }},
		{"acquire", func(ctx context.Context) error { _, err := n.Acquire(ctx, acq); return err }},
		{"extend", func(ctx context.Context) error { _, err := n.Extend(ctx, ext); return err }},
		{"release", func(ctx context.Context) error { _, err := n.Release(ctx, rel); return err }},
		{"raise", func(ctx context.Context) error { _, err := n.RaiseFence(ctx, name, token, 5, time.Minute); return err }},
	}
	if fr, ok := n.(node.ForceReleaser); ok {
		ops = append(ops, operation{"forcerelease", func(ctx context.Context) error {
			_, err := fr.ForceRelease(ctx, node.ForceReleaseArgs{Name: name, Token: token, Fence: 2, Tombstone: time.Second})
			return err
		}})
	}
	if in, ok := n.(node.Inspector); ok {
		ops = append(ops,
			operation{"scan", func(ctx context.Context) error { _, err := in.Scan(ctx, node.ScanArgs{Match: "lock:*"}); return err }},
			operation{"inspect", func(ctx context.Context) error { _, err := in.Inspect(ctx, name); return err }})
	}
	if rw, ok := n.(node.ReadWriter); ok {
		for _, m := range []node.Mode{node.Shared, node.Exclusive} {
			ops = append(ops,
				operation{"acquire-rw", func(ctx context.Context) error { _, err := rw.AcquireRW(ctx, m, acq); return err }},
				operation{"extend-rw", func(ctx context.Context) error { _, err := rw.ExtendRW(ctx, m, ext); return err }},
				operation{"release-rw", func(ctx context.Context) error { _, err := rw.ReleaseRW(ctx, m, rel); return err }},
				operation{"raise-rw", func(ctx context.Context) error {
					_, err := rw.RaiseFenceRW(ctx, m, name, token, 5, time.Minute)
					return err
				}})
		}
	}
	return ops
}

// PanicSite is the function in which a panic was raised, read from the
// stack of the goroutine that recovered it: the frame under the last
// "panic(" (a library that recovers and panics again leaves two).
func PanicSite(stack string) string {
	i := strings.LastIndex(stack, "\npanic(")
	if i < 0 {
		return ""
	}
	lines := strings.Split(stack[i+1:], "\n")
	if len(lines) < 3 { // panic(...), its file line, then the site
		return ""
	}
	return lines[2]
}
