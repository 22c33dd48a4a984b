package node

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
)

// Redis is a Node backed by one independent Redis server, reached through a
// go-redis client the caller owns (and closes): a *redis.Client, a
// *redis.ClusterClient (the client's names put a lock, its counter and its
// tombstones in one slot), a *redis.Ring, or any redis.Scripter. It is safe
// for concurrent use.
type Redis struct {
	name   string
	client redis.Scripter
}

var _ Node = (*Redis)(nil)

// NewRedis wraps a go-redis client. The node's name is the client's address
// when it has one (Options().Addr); use NewRedisNamed otherwise.
func NewRedis(client redis.Scripter) *Redis {
	name := fmt.Sprintf("redis@%p", client)
	if o, ok := client.(interface{ Options() *redis.Options }); ok && o.Options() != nil && o.Options().Addr != "" {
		name = o.Options().Addr
	}
	return &Redis{name: name, client: client}
}

// NewRedisNamed is NewRedis with an explicit name for errors and logs.
func NewRedisNamed(name string, client redis.Scripter) *Redis {
	return &Redis{name: name, client: client}
}

// Name implements Node.
func (n *Redis) Name() string { return n.name }

// Client returns the wrapped go-redis client.
func (n *Redis) Client() redis.Scripter { return n.client }

var maxSkewMicros any = strconv.FormatInt(MaxSeedSkew.Microseconds(), 10) // boxed once

// Acquire implements Node.
func (n *Redis) Acquire(ctx context.Context, a AcquireArgs) (AcquireReply, error) {
	if err := a.Validate(); err != nil {
		return AcquireReply{}, err
	}
	s := acquireArgsCache.get(a, a.Token, AcquireArgs.scriptArgs)
	vals, err := acquireScript.Run(ctx, n.client, s.keys, s.argv...).Slice()
	if err != nil {
		return AcquireReply{}, err
	}
	if len(vals) < 2 || len(vals) > 6 {
		return AcquireReply{}, fmt.Errorf("node: unexpected acquire reply %v", vals)
	}
	ok, err1 := replyInt(vals[0])
	v, err2 := replyInt(vals[1])
	if err := errors.Join(err1, err2); err != nil {
		return AcquireReply{}, fmt.Errorf("node: acquire reply %v: %w", vals, err)
	}
	var third string
	if len(vals) >= 3 {
		third, _ = vals[2].(string)
	}
	age, creator := int64(-1), int64(0)
	if len(vals) >= 4 {
		if a, ok := vals[3].(int64); ok {
			age = a
		}
	}
	if len(vals) >= 5 {
		creator, _ = vals[4].(int64)
	}
	touched := int64(-1)
	if len(vals) == 6 {
		if a, ok := vals[5].(int64); ok {
			touched = a
		}
	}
	return AcquireReplyOf(ok == 1, v, third).WithDataAge(age).WithDataCreator(creator).WithDataTouchedAge(touched), nil
}

// scriptArgs are the KEYS and ARGV of one script call.
type scriptArgs struct {
	keys []string
	argv []any
}

// acquireArgsCache and releaseArgsCache share the script arguments of one
// call among the nodes it is sent to (see argCache).
var (
	acquireArgsCache = newArgCache[AcquireArgs, *scriptArgs]()
	releaseArgsCache = newArgCache[ReleaseArgs, *scriptArgs]()

	acquireStringsCache = newArgCache[AcquireArgs, *scriptStrings]()
	releaseStringsCache = newArgCache[ReleaseArgs, *scriptStrings]()
)

// scriptStrings are the KEYS and ARGV of one script call as strings, for
// nodes over clients that take them so (rueidisnode).
type scriptStrings struct {
	keys, argv []string
}

func (a AcquireArgs) scriptStrings() *scriptStrings {
	return &scriptStrings{
		keys: []string{a.Name, CounterKey(a.Name), TombstoneKey(a.Name, a.Token), TrailKey(a.Name), MarkerKey(a.Name)},
		argv: []string{a.Token, strconv.FormatInt(millis(a.TTL), 10), strconv.FormatUint(a.Seed, 10),
			strconv.FormatInt(millis(RetentionOrDefault(a.Retention)), 10), maxSkewMicros.(string), micros(a.At), a.Owner, waiterArg(a.Waiter),
			strconv.FormatInt(millis(a.MarkerRetention), 10)},
	}
}

// ScriptArgs returns the KEYS and ARGV of the acquire script (see
// LuaScripts), shared by every node the same call is sent to: the caller
// must not change them. For nodes over other Redis clients.
func (a AcquireArgs) ScriptArgs() (keys, argv []string) {
	s := acquireStringsCache.get(a, a.Token, AcquireArgs.scriptStrings)
	return s.keys, s.argv
}

func (a ReleaseArgs) scriptStrings() *scriptStrings {
	tomb := "0"
	if a.Tombstone > 0 {
		tomb = strconv.FormatInt(millis(a.Tombstone), 10)
	}
	return &scriptStrings{keys: []string{a.Name, TombstoneKey(a.Name, a.Token), TrailKey(a.Name)}, argv: []string{a.Token, tomb, a.Channel}}
}

// ScriptArgs returns the KEYS and ARGV of the release script, as
// AcquireArgs.ScriptArgs does.
func (a ReleaseArgs) ScriptArgs() (keys, argv []string) {
	if a.Tombstone > 0 { // sent to one node only: nothing to share
		s := a.scriptStrings()
		return s.keys, s.argv
	}
	s := releaseStringsCache.get(a, a.Token, ReleaseArgs.scriptStrings)
	return s.keys, s.argv
}

func (a AcquireArgs) scriptArgs() *scriptArgs {
	return &scriptArgs{
		keys: []string{a.Name, CounterKey(a.Name), TombstoneKey(a.Name, a.Token), TrailKey(a.Name), MarkerKey(a.Name)},
		argv: []any{a.Token, millis(a.TTL), strconv.FormatUint(a.Seed, 10), millis(RetentionOrDefault(a.Retention)),
			maxSkewMicros, micros(a.At), a.Owner, waiterArg(a.Waiter), millis(a.MarkerRetention)},
	}
}

// waiterArg is AcquireArgs.Waiter as the acquire script takes it.
func waiterArg(w bool) string {
	if w {
		return "1"
	}
	return "0"
}

// AcquireReplyOf reads the reply {acquired, value[, third]} of the acquire
// script: value is the counter when acquired, the holder's PTTL otherwise
// (0 for a tombstone, -1 for a key without expiry); third is the previous
// trail when acquired, the holder's release id otherwise.
func AcquireReplyOf(acquired bool, value int64, third string) AcquireReply {
	holder := third
	switch {
	case acquired:
		r := AcquireReply{Acquired: true, Fence: uint64(max(value, 0))}
		r.Previous, _ = ParseTrail(third)
		return r
	case holder == "" || value == -1: // a tombstone, or a key that never expires
		return AcquireReply{Holder: holder}
	case value <= 0: // expiring within the millisecond, or just gone
		return AcquireReply{HolderTTL: time.Millisecond, Holder: holder}
	}
	return AcquireReply{HolderTTL: time.Duration(value) * time.Millisecond, Holder: holder}
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
func (n *Redis) Extend(ctx context.Context, ops []ExtendArgs) ([]ExtendResult, error) {
	for _, op := range ops {
		if err := op.Validate(); err != nil {
			return nil, err
		}
	}
	res := make([]ExtendResult, len(ops))
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

func extendKeys(op ExtendArgs) []string {
	return []string{op.Name, CounterKey(op.Name), TombstoneKey(op.Name, op.Token), TrailKey(op.Name), MarkerKey(op.Name)}
}

func extendArgs(op ExtendArgs) []any {
	return []any{op.Token, millis(op.TTL), strconv.FormatUint(op.Fence, 10), millis(RetentionOrDefault(op.Retention)),
		micros(op.At), op.Owner, millis(op.MarkerRetention)}
}

func extendResult(v int64, err error) (ExtendResult, error) {
	if err != nil {
		return NotHeld, err
	}
	if v < int64(NotHeld) || v > int64(Reasserted) {
		return NotHeld, fmt.Errorf("node: unexpected extend reply %d", v)
	}
	return ExtendResult(v), nil
}

// Release implements Node.
func (n *Redis) Release(ctx context.Context, a ReleaseArgs) (bool, error) {
	if err := a.Validate(); err != nil {
		return false, err
	}
	var s *scriptArgs
	if a.Tombstone > 0 { // sent to one node only: nothing to share
		s = a.scriptArgs()
	} else {
		s = releaseArgsCache.get(a, a.Token, ReleaseArgs.scriptArgs)
	}
	v, err := releaseScript.Run(ctx, n.client, s.keys, s.argv...).Int64()
	return err == nil && v == 1, err
}

func (a ReleaseArgs) scriptArgs() *scriptArgs {
	var tomb any = "0"
	if a.Tombstone > 0 {
		tomb = millis(a.Tombstone)
	}
	return &scriptArgs{
		keys: []string{a.Name, TombstoneKey(a.Name, a.Token), TrailKey(a.Name)},
		argv: []any{a.Token, tomb, a.Channel},
	}
}

// ForceRelease implements Node.
func (n *Redis) ForceRelease(ctx context.Context, a ForceReleaseArgs) (bool, error) {
	if err := a.Validate(); err != nil {
		return false, err
	}
	var tomb int64
	if a.Tombstone > 0 {
		tomb = millis(a.Tombstone)
	}
	keys := []string{a.Name, CounterKey(a.Name), TombstoneKey(a.Name, a.Token)}
	v, err := forceReleaseScript.Run(ctx, n.client, keys, a.Token, strconv.FormatUint(a.Fence, 10),
		millis(RetentionOrDefault(a.Retention)), tomb, a.Channel).Int64()
	return err == nil && v == 1, err
}

// Scan implements Node with SCAN MATCH COUNT, never KEYS. Over a
// *redis.ClusterClient it scans the masters one after the other (in the
// order of their addresses; the cursor is "master/cursor"); over a client
// without Scan it runs SCAN in a script. Over a *redis.Ring, whose shards
// a script cannot reach, it fails with errors.ErrUnsupported.
func (n *Redis) Scan(ctx context.Context, a ScanArgs) (ScanPage, error) {
	if err := a.Validate(); err != nil {
		return ScanPage{}, err
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
		return ScanPage{}, fmt.Errorf("node: %s: scan over a *redis.Ring: %w (use one node per server)", n.name, errors.ErrUnsupported)
	}
	cursor, err := parseCursor(a.Cursor)
	if err != nil {
		return ScanPage{}, err
	}
	keys, next, err := scanOne(ctx, n.client, cursor, match, count)
	if err != nil {
		return ScanPage{}, err
	}
	return ScanPageOf(keys, next), nil
}

func parseCursor(s string) (uint64, error) {
	if s == "" {
		return 0, nil
	}
	c, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, invalid("scan cursor %q", s)
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
func (n *Redis) scanCluster(ctx context.Context, cc *redis.ClusterClient, cursor, match string, count int64) (ScanPage, error) {
	var masters []*redis.Client
	var mu sync.Mutex
	if err := cc.ForEachMaster(ctx, func(_ context.Context, c *redis.Client) error {
		mu.Lock()
		defer mu.Unlock()
		masters = append(masters, c)
		return nil
	}); err != nil {
		return ScanPage{}, err
	}
	slices.SortFunc(masters, func(a, b *redis.Client) int { return strings.Compare(a.Options().Addr, b.Options().Addr) })
	i, c := 0, uint64(0)
	if cursor != "" {
		is, cs, _ := strings.Cut(cursor, "/")
		idx, err1 := strconv.Atoi(is)
		cur, err2 := strconv.ParseUint(cs, 10, 64)
		if err1 != nil || err2 != nil || idx < 0 {
			return ScanPage{}, invalid("scan cursor %q", cursor)
		}
		i, c = idx, cur
	}
	if i >= len(masters) {
		return ScanPage{}, nil
	}
	keys, next, err := masters[i].Scan(ctx, c, match, count).Result()
	if err != nil {
		return ScanPage{}, err
	}
	p := ScanPageOf(keys, 0)
	switch {
	case next != 0:
		p.Cursor = fmt.Sprintf("%d/%d", i, next)
	case i+1 < len(masters):
		p.Cursor = fmt.Sprintf("%d/0", i+1)
	}
	return p, nil
}

// ScanPageOf makes a page of a SCAN reply: the lock names among keys, and
// the cursor ("" at the end).
func ScanPageOf(keys []string, next uint64) ScanPage {
	p := ScanPage{Names: make([]string, 0, len(keys))}
	for _, k := range keys {
		if !isCompanion(k) {
			p.Names = append(p.Names, k)
		}
	}
	if next != 0 {
		p.Cursor = strconv.FormatUint(next, 10)
	}
	return p
}

// RaiseFence implements Node.
func (n *Redis) RaiseFence(ctx context.Context, name, token string, fence uint64, retention time.Duration) (bool, error) {
	if err := ValidateRaise(name, token, fence, retention); err != nil {
		return false, err
	}
	v, err := raiseScript.Run(ctx, n.client, []string{name, CounterKey(name), TrailKey(name)},
		token, strconv.FormatUint(fence, 10), millis(RetentionOrDefault(retention))).Int64()
	return err == nil && v == 1, err
}

// Inspect implements Node.
func (n *Redis) Inspect(ctx context.Context, name string) (Holding, error) {
	if name == "" {
		return Holding{}, invalid("empty name")
	}
	vals, err := inspectScript.Run(ctx, n.client, []string{name, CounterKey(name), MarkerKey(name)}).Slice()
	if err != nil {
		return Holding{}, err
	}
	if len(vals) != 4 && len(vals) != 5 {
		return Holding{}, fmt.Errorf("node: unexpected inspect reply %v", vals)
	}
	value, _ := vals[0].(string)
	ms, err1 := replyInt(vals[1])
	f, err2 := replyInt(vals[2])
	if err := errors.Join(err1, err2); err != nil {
		return Holding{}, fmt.Errorf("node: inspect reply %v: %w", vals, err)
	}
	h := HoldingOf(value, ms, f)
	if age, ok := vals[3].(int64); ok { // false (nil or false): no marker
		h.DataAge, h.DataAgeKnown = time.Duration(age)*time.Millisecond, true
	}
	if len(vals) == 5 {
		if age, ok := vals[4].(int64); ok { // false: not recorded
			h.DataTouchedAge, h.DataTouchedKnown = time.Duration(age)*time.Millisecond, true
		}
	}
	return h, nil
}

// HoldingOf reads the reply of the inspect script: the lock key's value
// ("" when free), its PTTL and the counter.
func HoldingOf(value string, pttl, counter int64) Holding {
	var h Holding
	if value != "" {
		h = ParseLockValue(value)
		if pttl > 0 {
			h.TTL = time.Duration(pttl) * time.Millisecond
		}
	}
	h.Fence = uint64(max(counter, 0))
	return h
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
func (n *Redis) Identify(ctx context.Context) (Identity, error) {
	id, err := n.identifyByInfo(ctx)
	var reply redis.Error
	if err == nil || id.ID != "" || !errors.Is(err, errNoRunID) && !errors.As(err, &reply) {
		return id, err // identified, or no answer at all (down, cancelled)
	}
	var random [16]byte
	_, _ = rand.Read(random[:]) // never fails (crypto/rand panics rather)
	stored, serr := storedIDScript.Run(ctx, n.client, []string{StoredIDKey}, hex.EncodeToString(random[:])).Text()
	if serr != nil || stored == "" {
		return Identity{}, errors.Join(err, serr)
	}
	if id.Eviction == "" {
		id.Eviction = "unknown"
	}
	return Identity{ID: "stored:" + stored, Eviction: id.Eviction}, nil
}

// errNoRunID: the server's INFO has no run_id.
var errNoRunID = errors.New("node: INFO lacks run_id")

// StoredIDKey is where the id of a server without run_id is stored (see
// Redis.Identify). It has no expiry and is no lock key.
const StoredIDKey = "quorumlock:server-id"

// storedIDScript sets KEYS[1] to ARGV[1] unless it has a value, and returns
// the value.
var storedIDScript = redis.NewScript(`redis.call('SET', KEYS[1], ARGV[1], 'NX')
return redis.call('GET', KEYS[1])`)

func (n *Redis) identifyByInfo(ctx context.Context) (Identity, error) {
	if c, ok := n.client.(interface {
		Info(ctx context.Context, section ...string) *redis.StringCmd
	}); ok {
		server, err := c.Info(ctx, "server").Result()
		if err != nil {
			return Identity{}, err
		}
		memory, err := c.Info(ctx, "memory").Result()
		if err != nil {
			return Identity{}, err
		}
		return ParseIdentity(server, memory)
	}
	vals, err := identifyScript.Run(ctx, n.client, nil).StringSlice()
	if err != nil {
		return Identity{}, fmt.Errorf("node: identify %s through a script: %w", n.name, err)
	}
	return ParseIdentity(vals...)
}

// ParseIdentity reads run_id and maxmemory_policy from INFO replies.
func ParseIdentity(info ...string) (Identity, error) {
	var id Identity
	for _, s := range info {
		for line := range strings.Lines(s) {
			k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
			switch k {
			case "run_id":
				id.ID = v
			case "maxmemory_policy":
				id.Eviction = v
			}
		}
	}
	if id.ID == "" {
		return id, errNoRunID
	}
	if id.Eviction == "" {
		return id, errors.New("node: INFO lacks maxmemory_policy")
	}
	return id, nil
}
