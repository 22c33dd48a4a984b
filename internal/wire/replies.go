package wire

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/quorumlock/quorumlock/node"
)

// acquireStringsCache and releaseStringsCache share the script arguments
// of one call among the nodes it is sent to (see Cache).
var (
	acquireStringsCache = NewCache[node.AcquireArgs, *scriptStrings]()
	releaseStringsCache = NewCache[node.ReleaseArgs, *scriptStrings]()
)

// scriptStrings are the KEYS and ARGV of one script call as strings, for
// nodes over clients that take them so (rueidisnode).
type scriptStrings struct {
	keys, argv []string
}

func acquireStrings(a node.AcquireArgs) *scriptStrings {
	return acquireStringsFor(a, false)
}

func acquireStringsFor(a node.AcquireArgs, perSlot bool) *scriptStrings {
	k := KeysOf(a.Name, a.Token)
	return &scriptStrings{
		keys: []string{k.Lock, k.Tombstone, RecordKey(a.Name, perSlot)},
		argv: []string{a.Token, strconv.FormatInt(Millis(a.TTL), 10), strconv.FormatUint(a.Seed, 10),
			strconv.FormatInt(Millis(RetentionOrDefault(a.Retention)), 10), MaxSkewMicros, Micros(a.At), a.Owner, WaiterArg(a.Waiter),
			strconv.FormatInt(Millis(a.Recovery), 10), strconv.FormatInt(Millis(a.Hold), 10), a.From},
	}
}

// AcquireScriptArgs returns the KEYS and ARGV of the acquire script (see
// LuaScripts), shared by every node the same call is sent to: the caller
// must not change them.
// perSlot: the node is a Redis Cluster (see RecordKey).
func AcquireScriptArgs(a node.AcquireArgs, perSlot bool) (keys, argv []string) {
	if perSlot {
		s := acquireStringsFor(a, true)
		return s.keys, s.argv
	}
	s := acquireStringsCache.Get(a, a.Token, acquireStrings)
	return s.keys, s.argv
}

func releaseStrings(a node.ReleaseArgs) *scriptStrings {
	tomb := "0"
	if a.Tombstone > 0 {
		tomb = strconv.FormatInt(Millis(a.Tombstone), 10)
	}
	k := KeysOf(a.Name, a.Token)
	return &scriptStrings{keys: []string{k.Lock, k.Tombstone}, argv: []string{a.Token, tomb, a.Channel, a.From}}
}

// ReleaseScriptArgs returns the KEYS and ARGV of the release script, as
// AcquireScriptArgs does.
func ReleaseScriptArgs(a node.ReleaseArgs) (keys, argv []string) {
	if a.Tombstone > 0 { // sent to one node only: nothing to share
		s := releaseStrings(a)
		return s.keys, s.argv
	}
	s := releaseStringsCache.Get(a, a.Token, releaseStrings)
	return s.keys, s.argv
}

// WaiterArg is AcquireArgs.Waiter as the acquire script takes it.
func WaiterArg(w bool) string {
	if w {
		return "1"
	}
	return "0"
}

// AcquireReplyOf reads the reply {acquired, value[, third]} of the acquire
// script: value is the counter when acquired, the holder's PTTL otherwise
// (0 for a tombstone, -1 for a key without expiry); third is the previous
// trail when acquired, the holder's release id otherwise.
func AcquireReplyOf(acquired bool, value int64, third string) node.AcquireReply {
	holder := third
	switch {
	case acquired:
		r := node.AcquireReply{Acquired: true, Fence: uint64(max(value, 0))}
		r.Previous, _ = ParseTrail(third)
		return r
	case holder == "" || value == -1: // a tombstone, or a key that never expires
		return node.AcquireReply{Holder: holder}
	case value <= 0: // expiring within the millisecond, or just gone
		return node.AcquireReply{HolderTTL: time.Millisecond, Holder: holder}
	}
	return node.AcquireReply{HolderTTL: time.Duration(value) * time.Millisecond, Holder: holder}
}

// ScanPageOf makes a page of a SCAN reply: the lock names among keys, and
// the cursor ("" at the end).
func ScanPageOf(keys []string, next uint64) node.ScanPage {
	p := node.ScanPage{Names: make([]string, 0, len(keys))}
	for _, k := range keys {
		if !IsCompanion(k) {
			p.Names = append(p.Names, k)
		}
	}
	if next != 0 {
		p.Cursor = strconv.FormatUint(next, 10)
	}
	return p
}

// HoldingOf reads the reply of the inspect script: the lock key's value
// ("" when free), its PTTL and the counter.
func HoldingOf(value string, pttl, counter int64) node.Holding {
	var h node.Holding
	if value != "" {
		h = ParseLockValue(value)
		if pttl > 0 {
			h.TTL = time.Duration(pttl) * time.Millisecond
		}
	}
	h.Fence = uint64(max(counter, 0))
	return h
}

// ErrNoRunID: the server's INFO has no run_id.
var ErrNoRunID = errors.New("node: INFO lacks run_id")

// StoredIDKey is where the id of a server without run_id is stored (see
// Redis.Identify). It has no expiry and is no lock key.
const StoredIDKey = "quorumlock:server-id"

// ParseIdentity reads run_id and maxmemory_policy from INFO replies.
func ParseIdentity(info ...string) (node.Identity, error) {
	var id node.Identity
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
		return id, ErrNoRunID
	}
	if id.Eviction == "" {
		return id, errors.New("node: INFO lacks maxmemory_policy")
	}
	return id, nil
}

// StandingOf reads a standing as the scripts report it: 1 or "V [hold]"
// (it votes), "L id learned-ms scope [hold]", or nil (not asked); hold in
// ms. Anything else is an error.
func StandingOf(v any) (node.Standing, error) {
	str, ok := v.(string)
	if n, isInt := v.(int64); isInt && n == 1 {
		return node.Standing{Known: true, Voting: true}, nil
	}
	if v == nil || v == false {
		return node.Standing{}, nil
	}
	if !ok {
		return node.Standing{}, fmt.Errorf("node: standing %v is not a string", v)
	}
	return ParseStanding(str)
}

// ParseStanding reads a standing string ("V [hold]" or "L id learned-ms
// scope [hold]").
func ParseStanding(s string) (node.Standing, error) {
	f := strings.Fields(s)
	ms := func(field string) (time.Duration, bool) {
		n, err := strconv.ParseInt(field, 10, 64)
		return time.Duration(n) * time.Millisecond, err == nil && n >= 0 && n < math.MaxInt64/int64(time.Millisecond)
	}
	switch {
	case len(f) == 1 && f[0] == "V":
		return node.Standing{Known: true, Voting: true}, nil
	case len(f) == 2 && f[0] == "V":
		if hold, ok := ms(f[1]); ok {
			return node.Standing{Known: true, Voting: true, Hold: hold}, nil
		}
	case (len(f) == 4 || len(f) == 5) && f[0] == "L":
		st := node.Standing{Known: true, ID: f[1], Scope: f[3]}
		learned, ok := ms(f[2])
		if len(f) == 5 && ok {
			st.Hold, ok = ms(f[4])
		}
		if ok {
			st.Learned = learned
			return st, nil
		}
	}
	return node.Standing{}, fmt.Errorf("node: unreadable standing %q", s)
}
