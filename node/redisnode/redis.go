package redisnode

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/internal/wire"
	"github.com/quorumlock/quorumlock/node"
)

// Node is a node.Node backed by one independent Redis server, reached through a
// go-redis client the caller owns (and closes): a *redis.Client, a
// *redis.ClusterClient (the client's names put a lock, its counter and its
// tombstones in one slot), a *redis.Ring, or any redis.Scripter. It is safe
// for concurrent use.
type Node struct {
	name    string
	client  redis.Scripter
	perSlot bool // a Redis Cluster: one standing record per hash slot (wire.RecordKey)
}

var _ node.Node = (*Node)(nil)

// New wraps a go-redis client. The node's name is the client's address
// when it has one (Options().Addr); use NewNamed otherwise.
//
// Give it a client whose Options.Dialer is BoundedDialer(nil, nil) (and
// Options.TLSConfig passed there too when you use TLS). With a plain
// client, a node, or anything at its address, that announces a huge reply
// (say 100 GB) kills the whole process with "fatal error: out of memory",
// which no recover and no quorum can stop; over BoundedDialer the same
// reply is only that node's error (ErrReplyTooLong).
func New(client redis.Scripter) *Node {
	name := fmt.Sprintf("redis@%p", client)
	if o, ok := client.(interface{ Options() *redis.Options }); ok && o.Options() != nil && o.Options().Addr != "" {
		name = o.Options().Addr
	}
	return NewNamed(name, client)
}

// NewNamed is New with an explicit name for errors and logs.
func NewNamed(name string, client redis.Scripter) *Node {
	_, perSlot := client.(*redis.ClusterClient)
	return &Node{name: name, client: client, perSlot: perSlot}
}

// Name implements Node.
func (n *Node) Name() string { return n.name }

// Client returns the wrapped go-redis client.
func (n *Node) Client() redis.Scripter { return n.client }

var maxSkewMicros = strconv.FormatInt(node.MaxSeedSkew.Microseconds(), 10) // formatted once

// Acquire implements Node.
func (n *Node) Acquire(ctx context.Context, a node.AcquireArgs) (node.AcquireReply, error) {
	if err := a.Validate(); err != nil {
		return node.AcquireReply{}, err
	}
	s := n.acquireArgs(a)
	vals, err := runScript(ctx, n.client, acquireScript, s).Slice()
	if err != nil {
		return node.AcquireReply{}, err
	}
	if len(vals) < 2 || len(vals) > 4 {
		return node.AcquireReply{}, fmt.Errorf("node: unexpected acquire reply %v", vals)
	}
	ok, err1 := replyInt(vals[0])
	v, err2 := replyInt(vals[1])
	if err := errors.Join(err1, err2); err != nil {
		return node.AcquireReply{}, fmt.Errorf("node: acquire reply %v: %w", vals, err)
	}
	var third string
	if len(vals) >= 3 {
		third, _ = vals[2].(string)
	}
	r := wire.AcquireReplyOf(ok == 1, v, third)
	if len(vals) == 4 {
		if r.Standing, err = wire.StandingOf(vals[3]); err != nil {
			return node.AcquireReply{}, err
		}
	}
	return r, nil
}

// acquireArgs are the script arguments of a, shared by the nodes of one
// call, except a cluster's (its record key is the name's slot's).
func (n *Node) acquireArgs(a node.AcquireArgs) *scriptArgs {
	if n.perSlot {
		return acquireArgsFor(a, true)
	}
	return acquireArgsCache.Get(a, a.Token, acquireArgs)
}

// scriptArgs are the KEYS and ARGV of one script call.
type scriptArgs struct {
	keys    []string
	strs    []string // ARGV
	argv    []any    // ARGV as the command holds it: the tail of evalsha
	evalsha []any    // the whole EVALSHA command (see runScript), built once

	// Room for the acquire script's keys, arguments and command, so that
	// they take no allocation of their own. The command points to the
	// arguments (a pointer in an interface is not boxed again); go-redis
	// hooks then show addresses for them, never the token.
	keyRoom [5]string
	argRoom [9]string
	cmdRoom [3 + 5 + 9]any
}

// scriptSHA is a script's SHA-1, boxed once for the commands' arguments.
type scriptSHA struct{ sha any }

var (
	acquireSHA = scriptSHA{sha: acquireScript.Hash()}
	releaseSHA = scriptSHA{sha: releaseScript.Hash()}
	keyCounts  = [...]any{"0", "1", "2", "3", "4", "5"} // boxed once
)

// newScriptArgs returns the arguments of one call of script.
func newScriptArgs(script scriptSHA, keys, argv []string) *scriptArgs {
	s := &scriptArgs{}
	s.keys = append(s.keyRoom[:0], keys...)
	s.strs = append(s.argRoom[:0], argv...)
	var count any = strconv.Itoa(len(keys))
	if len(keys) < len(keyCounts) {
		count = keyCounts[len(keys)]
	}
	cmd := append(s.cmdRoom[:0], "evalsha", script.sha, count)
	for _, k := range s.keys {
		cmd = append(cmd, k) // as text: a command's keys show in go-redis hooks (traces, logs)
	}
	for i := range s.strs {
		cmd = append(cmd, &s.strs[i])
	}
	s.evalsha, s.argv = cmd, cmd[3+len(keys):]
	return s
}

// doer is Do of go-redis's clients (Client, ClusterClient, Ring, Conn).
type doer interface {
	Do(ctx context.Context, args ...any) *redis.Cmd
}

// runScript runs script with s. Over a client with Do, it sends the
// EVALSHA command that s holds ready: the nodes of a call, which share s
// (see acquireArgsCache), then share one command's arguments, where
// Script.Run copies and boxes the keys again for each node. A server that
// lacks the script gets it with EVAL, as Run does.
func runScript(ctx context.Context, c redis.Scripter, script *redis.Script, s *scriptArgs) *redis.Cmd {
	d, ok := c.(doer)
	if !ok || s.evalsha == nil {
		return script.Run(ctx, c, s.keys, s.argv...)
	}
	cmd := d.Do(ctx, s.evalsha...)
	if err := cmd.Err(); err != nil && (errors.Is(err, redis.ErrNoScript) || redis.HasErrorPrefix(err, "NOSCRIPT")) {
		return script.Eval(ctx, c, s.keys, s.argv...)
	}
	return cmd
}

// acquireArgsCache and releaseArgsCache share the script arguments of one
// call among the nodes it is sent to (see wire.Cache).
var (
	acquireArgsCache = wire.NewCache[node.AcquireArgs, *scriptArgs]()
	releaseArgsCache = wire.NewCache[node.ReleaseArgs, *scriptArgs]()
)

func acquireArgs(a node.AcquireArgs) *scriptArgs { return acquireArgsFor(a, false) }

func acquireArgsFor(a node.AcquireArgs, perSlot bool) *scriptArgs {
	k := wire.KeysOf(a.Name, a.Token)
	return newScriptArgs(acquireSHA,
		[]string{k.Lock, k.Tombstone, wire.RecordKey(a.Name, perSlot)},
		[]string{a.Token, strconv.FormatInt(wire.Millis(a.TTL), 10), strconv.FormatUint(a.Seed, 10),
			strconv.FormatInt(wire.Millis(wire.RetentionOrDefault(a.Retention)), 10), maxSkewMicros, wire.Micros(a.At), a.Owner,
			wire.WaiterArg(a.Waiter), strconv.FormatInt(wire.Millis(a.Recovery), 10), strconv.FormatInt(wire.Millis(a.Hold), 10), a.From})
}

// replyInt reads an integer reply, or a counter sent as a string (which
// Lua's doubles would round above 2^53).
func replyInt(v any) (int64, error) {
	switch v := v.(type) {
	case int64:
		return v, nil
	case string:
		return strconv.ParseInt(v, 10, 64)
	case nil:
		return 0, nil
	}
	return 0, fmt.Errorf("unexpected %T", v)
}

// Extend implements Node: one EVALSHA per op, all in one pipeline when the
// client can pipeline (a ClusterClient splits it by slot).
func (n *Node) Extend(ctx context.Context, ops []node.ExtendArgs) ([]node.ExtendResult, error) {
	for _, op := range ops {
		if err := op.Validate(); err != nil {
			return nil, err
		}
	}
	res := make([]node.ExtendResult, len(ops))
	if len(ops) == 0 {
		return res, nil
	}
	p, ok := n.client.(interface{ Pipeline() redis.Pipeliner })
	if !ok {
		for i, op := range ops {
			v, err := extendScript.Run(ctx, n.client, extendKeys(op), extendArgs(op)...).Int64()
			if res[i], err = extendResult(v, err); err != nil {
				return nil, err
			}
		}
		return res, nil
	}
	run := func(eval bool) (noscript bool, err error) {
		pipe := p.Pipeline()
		cmds := make([]*redis.Cmd, len(ops))
		for i, op := range ops {
			if eval {
				cmds[i] = extendScript.Eval(ctx, pipe, extendKeys(op), extendArgs(op)...)
			} else {
				cmds[i] = extendScript.EvalSha(ctx, pipe, extendKeys(op), extendArgs(op)...)
			}
		}
		_, _ = pipe.Exec(ctx) // errors are read per command
		for i, c := range cmds {
			v, err := c.Int64()
			if !eval && redis.HasErrorPrefix(err, "NOSCRIPT") {
				return true, nil
			}
			if res[i], err = extendResult(v, err); err != nil {
				return false, err
			}
		}
		return false, nil
	}
	noscript, err := run(false)
	if noscript {
		// The server lost its script cache (a restart): load the script and
		// send the batch again; EVAL, which carries the source with every
		// op, only if the load failed. The script is idempotent, so ops
		// that already ran before the NOSCRIPT may run again.
		if extendScript.Load(ctx, n.client).Err() == nil {
			noscript, err = run(false)
		}
		if noscript {
			_, err = run(true)
		}
	}
	if err != nil {
		return nil, err
	}
	return res, nil
}

func extendKeys(op node.ExtendArgs) []string {
	k := wire.KeysOf(op.Name, op.Token)
	return []string{k.Lock, k.Tombstone}
}

func extendArgs(op node.ExtendArgs) []any {
	return []any{op.Token, wire.Millis(op.TTL), strconv.FormatUint(op.Fence, 10), wire.Millis(wire.RetentionOrDefault(op.Retention)),
		wire.Micros(op.At), op.Owner}
}

func extendResult(v int64, err error) (node.ExtendResult, error) {
	if err != nil {
		return node.NotHeld, err
	}
	if v < int64(node.NotHeld) || v > int64(node.Reasserted) {
		return node.NotHeld, fmt.Errorf("node: unexpected extend reply %d", v)
	}
	return node.ExtendResult(v), nil
}

// Release implements Node.
func (n *Node) Release(ctx context.Context, a node.ReleaseArgs) (bool, error) {
	if err := a.Validate(); err != nil {
		return false, err
	}
	var s *scriptArgs
	if a.Tombstone > 0 { // sent to one node only: nothing to share
		s = releaseArgs(a)
	} else {
		s = releaseArgsCache.Get(a, a.Token, releaseArgs)
	}
	v, err := runScript(ctx, n.client, releaseScript, s).Int64()
	return err == nil && v == 1, err
}

func releaseArgs(a node.ReleaseArgs) *scriptArgs {
	tomb := "0"
	if a.Tombstone > 0 {
		tomb = strconv.FormatInt(wire.Millis(a.Tombstone), 10)
	}
	k := wire.KeysOf(a.Name, a.Token)
	return newScriptArgs(releaseSHA,
		[]string{k.Lock, k.Tombstone},
		[]string{a.Token, tomb, a.Channel, a.From})
}

// ForceRelease implements Node.
func (n *Node) ForceRelease(ctx context.Context, a node.ForceReleaseArgs) (bool, error) {
	if err := a.Validate(); err != nil {
		return false, err
	}
	var tomb int64
	if a.Tombstone > 0 {
		tomb = wire.Millis(a.Tombstone)
	}
	keys := []string{a.Name, wire.TombstoneKey(a.Name, a.Token)}
	v, err := forceReleaseScript.Run(ctx, n.client, keys, a.Token, strconv.FormatUint(a.Fence, 10),
		wire.Millis(wire.RetentionOrDefault(a.Retention)), tomb, a.Channel).Int64()
	return err == nil && v == 1, err
}

// Scan implements Node with SCAN MATCH COUNT, never KEYS. Over a
// *redis.ClusterClient it scans the masters one after the other (in the
// order of their addresses; the cursor is "master/cursor"); over a client
// without Scan it runs SCAN in a script. Over a *redis.Ring, whose shards
// a script cannot reach, it fails with errors.ErrUnsupported.
func (n *Node) Scan(ctx context.Context, a node.ScanArgs) (node.ScanPage, error) {
	if err := a.Validate(); err != nil {
		return node.ScanPage{}, err
	}
	match := a.Match
	if match == "" {
		match = "*"
	}
	count := int64(a.CountOrDefault())
	switch c := n.client.(type) {
	case *redis.ClusterClient:
		return n.scanCluster(ctx, c, a.Cursor, match, count)
	case *redis.Ring:
		return node.ScanPage{}, fmt.Errorf("node: %s: scan over a *redis.Ring: %w (use one node per server)", n.name, errors.ErrUnsupported)
	}
	cursor, err := parseCursor(a.Cursor)
	if err != nil {
		return node.ScanPage{}, err
	}
	keys, next, err := scanOne(ctx, n.client, cursor, match, count)
	if err != nil {
		return node.ScanPage{}, err
	}
	return wire.ScanPageOf(keys, next), nil
}

func parseCursor(s string) (uint64, error) {
	if s == "" {
		return 0, nil
	}
	c, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, wire.Invalid("scan cursor %q", s)
	}
	return c, nil
}

// scanOne is one SCAN on one server: the command when the client has it,
// else the same in a script.
func scanOne(ctx context.Context, c redis.Scripter, cursor uint64, match string, count int64) ([]string, uint64, error) {
	if sc, ok := c.(interface {
		Scan(ctx context.Context, cursor uint64, match string, count int64) *redis.ScanCmd
	}); ok {
		return sc.Scan(ctx, cursor, match, count).Result()
	}
	vals, err := scanScript.Run(ctx, c, nil, cursor, match, count).Slice()
	if err != nil {
		return nil, 0, err
	}
	if len(vals) != 2 {
		return nil, 0, fmt.Errorf("node: unexpected scan reply %v", vals)
	}
	next, err := replyInt(vals[0])
	if err != nil {
		return nil, 0, fmt.Errorf("node: scan reply cursor %v: %w", vals[0], err)
	}
	var keys []string
	if ks, ok := vals[1].([]any); ok {
		for _, k := range ks {
			if s, ok := k.(string); ok {
				keys = append(keys, s)
			}
		}
	}
	return keys, uint64(next), nil
}

// scanCluster scans the masters of a cluster in address order; the cursor
// is "index/cursor" of the master being scanned.
func (n *Node) scanCluster(ctx context.Context, cc *redis.ClusterClient, cursor, match string, count int64) (node.ScanPage, error) {
	var masters []*redis.Client
	var mu sync.Mutex
	if err := cc.ForEachMaster(ctx, func(_ context.Context, c *redis.Client) error {
		mu.Lock()
		defer mu.Unlock()
		masters = append(masters, c)
		return nil
	}); err != nil {
		return node.ScanPage{}, err
	}
	slices.SortFunc(masters, func(a, b *redis.Client) int { return strings.Compare(a.Options().Addr, b.Options().Addr) })
	i, c := 0, uint64(0)
	if cursor != "" {
		is, cs, _ := strings.Cut(cursor, "/")
		idx, err1 := strconv.Atoi(is)
		cur, err2 := strconv.ParseUint(cs, 10, 64)
		if err1 != nil || err2 != nil || idx < 0 {
			return node.ScanPage{}, wire.Invalid("scan cursor %q", cursor)
		}
		i, c = idx, cur
	}
	if i >= len(masters) {
		return node.ScanPage{}, nil
	}
	keys, next, err := masters[i].Scan(ctx, c, match, count).Result()
	if err != nil {
		return node.ScanPage{}, err
	}
	p := wire.ScanPageOf(keys, 0)
	switch {
	case next != 0:
		p.Cursor = fmt.Sprintf("%d/%d", i, next)
	case i+1 < len(masters):
		p.Cursor = fmt.Sprintf("%d/0", i+1)
	}
	return p, nil
}

// RaiseFence implements Node.
func (n *Node) RaiseFence(ctx context.Context, name, token string, fence uint64, retention time.Duration) (bool, error) {
	if err := wire.ValidateRaise(name, token, fence, retention); err != nil {
		return false, err
	}
	v, err := raiseScript.Run(ctx, n.client, []string{name},
		token, strconv.FormatUint(fence, 10), wire.Millis(wire.RetentionOrDefault(retention))).Int64()
	return err == nil && v == 1, err
}

// Inspect implements Node.
func (n *Node) Inspect(ctx context.Context, name string) (node.Holding, error) {
	if name == "" {
		return node.Holding{}, wire.Invalid("empty name")
	}
	vals, err := inspectScript.Run(ctx, n.client, []string{name, wire.CounterKey(name), wire.RecordKey(name, n.perSlot)}).Slice()
	if err != nil {
		return node.Holding{}, err
	}
	if len(vals) != 4 {
		return node.Holding{}, fmt.Errorf("node: unexpected inspect reply %v", vals)
	}
	value, _ := vals[0].(string)
	ms, err1 := replyInt(vals[1])
	f, err2 := replyInt(vals[2])
	if err := errors.Join(err1, err2); err != nil {
		return node.Holding{}, fmt.Errorf("node: inspect reply %v: %w", vals, err)
	}
	h := wire.HoldingOf(value, ms, f)
	if h.Standing, err = wire.StandingOf(vals[3]); err != nil {
		return node.Holding{}, err
	}
	return h, nil
}

// Learn implements node.Learner.
func (n *Node) Learn(ctx context.Context, a node.LearnArgs) (node.Standing, error) {
	if err := a.Validate(); err != nil {
		return node.Standing{}, err
	}
	v, err := learnScript.Run(ctx, n.client, []string{wire.RecordKey(a.Name, n.perSlot)}, wire.Millis(a.Recovery), a.Promote, wire.Millis(a.Hold)).Result()
	if err != nil {
		return node.Standing{}, err
	}
	return wire.StandingOf(v)
}

// Identify implements Node: INFO through the client when it has Info, else
// through a script (INFO is allowed in Lua). A server whose INFO has no
// run_id (an in-process Redis for tests, some proxies) is identified by an
// id it is given once: a random id stored under StoredIDKey, which every
// later call and every other client reads back (one server reached under
// two names still shows one id; a restart without persistence gives it a
// new one). Its eviction policy is then "unknown" unless INFO said it, and
// the client warns about it (or refuses it, with redlock's
// WithRequireNoEviction).
func (n *Node) Identify(ctx context.Context) (node.Identity, error) {
	id, err := n.identifyByInfo(ctx)
	var reply redis.Error
	if err == nil || id.ID != "" || !errors.Is(err, wire.ErrNoRunID) && !errors.As(err, &reply) {
		return id, err // identified, or no answer at all (down, cancelled)
	}
	var random [16]byte
	_, _ = rand.Read(random[:]) // never fails (crypto/rand panics rather)
	stored, serr := storedIDScript.Run(ctx, n.client, []string{wire.StoredIDKey}, hex.EncodeToString(random[:])).Text()
	if serr != nil || stored == "" {
		return node.Identity{}, errors.Join(err, serr)
	}
	if id.Eviction == "" {
		id.Eviction = "unknown"
	}
	return node.Identity{ID: "stored:" + stored, Eviction: id.Eviction}, nil
}

// storedIDScript sets KEYS[1] to ARGV[1] unless it has a value, and returns
// the value.
var storedIDScript = redis.NewScript(`redis.call('SET', KEYS[1], ARGV[1], 'NX')
return redis.call('GET', KEYS[1])`)

func (n *Node) identifyByInfo(ctx context.Context) (node.Identity, error) {
	if c, ok := n.client.(interface {
		Info(ctx context.Context, section ...string) *redis.StringCmd
	}); ok {
		server, err := c.Info(ctx, "server").Result()
		if err != nil {
			return node.Identity{}, err
		}
		memory, err := c.Info(ctx, "memory").Result()
		if err != nil {
			return node.Identity{}, err
		}
		return wire.ParseIdentity(server, memory)
	}
	vals, err := identifyScript.Run(ctx, n.client, nil).StringSlice()
	if err != nil {
		return node.Identity{}, fmt.Errorf("node: identify %s through a script: %w", n.name, err)
	}
	return wire.ParseIdentity(vals...)
}
