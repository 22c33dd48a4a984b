package redistest

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestKeySlot(t *testing.T) {
	if got := crc16("123456789"); got != 0x31C3 { // the CRC-16/XMODEM check value
		t.Fatalf("crc16(123456789) = %#x, want 0x31c3", got)
	}
	for _, tc := range []struct {
		key  string
		slot int
	}{
		{"", 0},
		{"foo", 12182}, // CLUSTER KEYSLOT foo
		{"bar", 5061},
		{"123456789", 0x31C3},
	} {
		if got := KeySlot(tc.key); got != tc.slot {
			t.Errorf("KeySlot(%q) = %d, want %d", tc.key, got, tc.slot)
		}
	}
	// Hash tags, as in the Redis Cluster specification.
	for _, tc := range []struct{ key, hashed string }{
		{"{user1000}.following", "user1000"},
		{"{user1000}.followers", "user1000"},
		{"foo{}{bar}", "foo{}{bar}"}, // empty tag: the whole key
		{"foo{{bar}}zap", "{bar"},
		{"foo{bar}{zap}", "bar"},
		{"foo{bar", "foo{bar"}, // no closing brace: the whole key
		{"}foo{bar}", "bar"},
	} {
		if got, want := KeySlot(tc.key), int(crc16(tc.hashed)%SlotCount); got != want {
			t.Errorf("KeySlot(%q) = %d, want %d (the slot of %q)", tc.key, got, want, tc.hashed)
		}
	}
}

func TestSlotRangesAndShardOf(t *testing.T) {
	for _, n := range []int{1, 2, 3, 5, 7, 16, SlotCount} {
		r := slotRanges(n)
		next, minSize, maxSize := 0, SlotCount, 0
		for i, rg := range r {
			if rg[0] != next || rg[1] < rg[0] {
				t.Fatalf("%d shards: range %d is %v, want it to start at %d", n, i, rg, next)
			}
			minSize, maxSize = min(minSize, rg[1]-rg[0]+1), max(maxSize, rg[1]-rg[0]+1)
			next = rg[1] + 1
		}
		if next != SlotCount || maxSize-minSize > 1 {
			t.Fatalf("%d shards: ranges %v... end at %d, sizes %d..%d", n, r[:1], next-1, minSize, maxSize)
		}
		s := &Sharded{ranges: r}
		for i := range 2000 {
			key := "key:" + strconv.Itoa(i)
			shard, slot := s.ShardOf(key), KeySlot(key)
			if shard < 0 || shard >= n || slot < r[shard][0] || slot > r[shard][1] {
				t.Fatalf("%d shards: ShardOf(%q) = %d, but its slot %d is not in that shard's range", n, key, shard, slot)
			}
		}
	}
}

// keysPerShard returns perShard keys for each shard, found by counting up:
// the same keys on every run.
func keysPerShard(s *Sharded, prefix string, perShard int) [][]string {
	keys := make([][]string, s.Shards())
	for i, full := 0, 0; full < s.Shards(); i++ {
		key := prefix + strconv.Itoa(i)
		sh := s.ShardOf(key)
		if len(keys[sh]) < perShard {
			keys[sh] = append(keys[sh], key)
			if len(keys[sh]) == perShard {
				full++
			}
		}
	}
	return keys
}

func TestShardedSpread(t *testing.T) {
	const shards, perShard = 3, 4
	s := StartShardedT(t, shards)
	ctx := ctxT(t)

	if s.Shards() != shards || len(s.Addrs()) != shards {
		t.Fatalf("Shards() = %d, Addrs() = %v; want %d", s.Shards(), s.Addrs(), shards)
	}
	keys := keysPerShard(s, "spread:", perShard)

	// Our slot arithmetic is the server's.
	admin := s.Node(0).Client()
	for _, ks := range keys {
		for _, key := range ks {
			for _, k := range []string{key, "{" + key + "}.x", key + "{}", "a{}{" + key + "}"} {
				got, err := admin.ClusterKeySlot(ctx, k).Result()
				if err != nil || int(got) != KeySlot(k) {
					t.Fatalf("CLUSTER KEYSLOT %q = %d, %v; KeySlot says %d", k, got, err, KeySlot(k))
				}
			}
		}
	}

	cc := s.NewClient(t)
	for sh, ks := range keys {
		for _, k := range ks {
			if err := cc.Set(ctx, k, "v-"+k, 0).Err(); err != nil {
				t.Fatalf("SET %s (shard %d): %v", k, sh, err)
			}
		}
	}
	for sh, ks := range keys {
		for _, k := range ks {
			if got, err := cc.Get(ctx, k).Result(); err != nil || got != "v-"+k {
				t.Fatalf("GET %s (shard %d) = %q, %v", k, sh, got, err)
			}
		}
	}

	// Each key lives on the shard ShardOf names, and only there; the others
	// redirect to it.
	for sh := range shards {
		node := s.Node(sh).Client()
		if n, err := node.DBSize(ctx).Result(); err != nil || n != perShard {
			t.Fatalf("shard %d: DBSIZE = %d, %v; want %d", sh, n, err, perShard)
		}
		for owner, ks := range keys {
			got, err := node.Get(ctx, ks[0]).Result()
			if owner == sh {
				if err != nil || got != "v-"+ks[0] {
					t.Fatalf("shard %d: GET own key %s = %q, %v", sh, ks[0], got, err)
				}
				continue
			}
			want := fmt.Sprintf("MOVED %d %s", KeySlot(ks[0]), s.Addrs()[owner])
			if err == nil || err.Error() != want {
				t.Fatalf("shard %d: GET %s of shard %d: err = %v, want %q", sh, ks[0], owner, err, want)
			}
		}
	}

	// A client that believes shard 0 serves every slot must follow the
	// MOVED replies of the real cluster.
	wrong := redis.NewClusterClient(&redis.ClusterOptions{
		ClusterSlots: func(context.Context) ([]redis.ClusterSlot, error) {
			return []redis.ClusterSlot{{Start: 0, End: SlotCount - 1, Nodes: []redis.ClusterNode{{Addr: s.Addrs()[0]}}}}, nil
		},
		ContextTimeoutEnabled: true,
	})
	defer wrong.Close()
	for sh, ks := range keys {
		for _, k := range ks {
			if got, err := wrong.Get(ctx, k).Result(); err != nil || got != "v-"+k {
				t.Fatalf("GET %s (shard %d) through redirects = %q, %v", k, sh, got, err)
			}
		}
	}
}

func TestShardedRestartEmpty(t *testing.T) {
	const shards, perShard, victim = 3, 3, 1
	s := StartShardedT(t, shards)
	ctx := ctxT(t)
	cc := s.NewClient(t) // in use before the restart: must work after it
	keys := keysPerShard(s, "restart:", perShard)
	for _, ks := range keys {
		for _, k := range ks {
			if err := cc.Set(ctx, k, "v-"+k, 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	addrs := s.Addrs()
	ids := make([]string, shards)
	for sh := range shards {
		ids[sh] = s.NodeID(sh)
	}

	if err := s.RestartEmpty(ctx, victim); err != nil {
		t.Fatal(err)
	}

	if got := s.Addrs(); !slices.Equal(got, addrs) {
		t.Fatalf("Addrs changed across RestartEmpty: %v -> %v", addrs, got)
	}
	myID, err := s.Node(victim).Client().Do(ctx, "CLUSTER", "MYID").Text()
	if err != nil || myID != ids[victim] || s.NodeID(victim) != ids[victim] {
		t.Fatalf("restarted shard's node id = %q, %v; want %q", myID, err, ids[victim])
	}
	// Exactly the victim's keys are gone.
	for sh, ks := range keys {
		for _, k := range ks {
			got, err := cc.Get(ctx, k).Result()
			if sh == victim {
				if !errors.Is(err, redis.Nil) {
					t.Fatalf("GET %s of the restarted shard = %q, %v; want redis.Nil", k, got, err)
				}
			} else if err != nil || got != "v-"+k {
				t.Fatalf("GET %s of shard %d = %q, %v; want it kept", k, sh, got, err)
			}
		}
		want := int64(perShard)
		if sh == victim {
			want = 0
		}
		if n, err := s.Node(sh).Client().DBSize(ctx).Result(); err != nil || n != want {
			t.Fatalf("shard %d: DBSIZE = %d, %v; want %d", sh, n, err, want)
		}
	}
	// The cluster answers again, through the old client and a new one, on
	// every shard.
	fresh := s.NewClient(t)
	for _, ks := range keys {
		k := ks[0]
		if err := cc.Set(ctx, k, "again", 0).Err(); err != nil {
			t.Fatalf("SET %s after restart: %v", k, err)
		}
		if got, err := fresh.Get(ctx, k).Result(); err != nil || got != "again" {
			t.Fatalf("GET %s after restart = %q, %v", k, got, err)
		}
	}

	for _, bad := range []int{-1, shards} {
		if err := s.RestartEmpty(ctx, bad); err == nil {
			t.Errorf("RestartEmpty(%d) succeeded", bad)
		}
	}
}

// skipTB records a skip or failure of StartShardedT instead of acting on the
// real test.
type skipTB struct {
	testing.TB
	skipped, failed string
}

func (f *skipTB) Helper() {}
func (f *skipTB) Skip(a ...any) {
	f.skipped = fmt.Sprint(a...)
	runtime.Goexit()
}
func (f *skipTB) Skipf(format string, a ...any) { f.Skip(fmt.Sprintf(format, a...)) }
func (f *skipTB) Fatalf(format string, a ...any) {
	f.failed = fmt.Sprintf(format, a...)
	runtime.Goexit()
}

func runSkipTB(t *testing.T, fn func(testing.TB)) *skipTB {
	f := &skipTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(f)
	}()
	<-done
	return f
}

// StartShardedT skips under -short and without redis-server (fails with
// CI=true), as StartT does.
func TestStartShardedTSkips(t *testing.T) {
	if testing.Short() {
		f := runSkipTB(t, func(tb testing.TB) { StartShardedT(tb, 3) })
		if f.skipped != SkipShort || f.failed != "" {
			t.Fatalf("under -short: skipped=%q failed=%q; want a skip with %q", f.skipped, f.failed, SkipShort)
		}
		return
	}
	t.Setenv("REDIS_SERVER", "/nonexistent/redis-server")
	for _, ci := range []string{"", "true"} {
		t.Setenv("CI", ci)
		f := runSkipTB(t, func(tb testing.TB) { StartShardedT(tb, 3) })
		msg := "install it with apt-get install -y redis-server"
		if ci == "true" {
			if !strings.Contains(f.failed, msg) || f.skipped != "" {
				t.Errorf("CI=true: failed=%q skipped=%q; want a failure mentioning %q", f.failed, f.skipped, msg)
			}
		} else if !strings.Contains(f.skipped, msg) || f.failed != "" {
			t.Errorf("CI unset: skipped=%q failed=%q; want a skip mentioning %q", f.skipped, f.failed, msg)
		}
	}
}

func TestStartShardedBadArgs(t *testing.T) {
	for _, n := range []int{0, -1, SlotCount + 1} {
		if s, err := StartSharded(t.Context(), n, Options{}); err == nil {
			_ = s.Close()
			t.Errorf("StartSharded(%d shards) succeeded", n)
		}
	}
	if s, err := StartSharded(t.Context(), 1, Options{Backend: BackendDocker}); err == nil {
		_ = s.Close()
		t.Error("StartSharded on the docker backend succeeded")
	}
}
