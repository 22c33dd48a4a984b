package redlock

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"

	"github.com/quorumlock/quorumlock/node"
)

// defaultOwner is host/pid/program, with control characters (which owners
// may not have) replaced, cut to the longest owner.
func defaultOwner() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	prog := "unknown"
	if len(os.Args) > 0 && os.Args[0] != "" {
		prog = filepath.Base(os.Args[0])
	}
	o := strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == unicode.ReplacementChar {
			return '?'
		}
		return r
	}, strings.ToValidUTF8(host+"/"+strconv.Itoa(os.Getpid())+"/"+prog, "?"))
	if len(o) > node.MaxOwnerLen {
		o = strings.ToValidUTF8(o[:node.MaxOwnerLen], "") // drops a rune cut in half
	}
	return o
}

// ownerKey is the context key of ContextWithOwner.
type ownerKey struct{}

// ContextWithOwner returns a copy of ctx with which Acquire, TryAcquire, Do
// and TryDo record owner instead of the client's WithOwner, for callers that
// take locks on behalf of several parties with one Client (package election
// records a candidate's value this way). The owner
// follows WithOwner's rules; a bad one fails the acquisition with
// ErrInvalidArgument before anything is sent.
func ContextWithOwner(ctx context.Context, owner string) context.Context {
	return context.WithValue(ctx, ownerKey{}, owner)
}

// ownerOf is the owner an acquisition made with ctx records.
func (c *Client) ownerOf(ctx context.Context) string {
	if o, ok := ctx.Value(ownerKey{}).(string); ok {
		return o
	}
	return c.cfg.owner
}

// checkContextOwner validates the owner of ContextWithOwner, if any.
func checkContextOwner(ctx context.Context) error {
	o, ok := ctx.Value(ownerKey{}).(string)
	if !ok {
		return nil
	}
	if o == "" {
		return invalidArg("empty owner")
	}
	if err := node.CheckOwner(o); err != nil {
		return invalidArg("%v", err)
	}
	return nil
}
