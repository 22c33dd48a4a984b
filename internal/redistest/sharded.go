package redistest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// SlotCount is the number of hash slots of a Redis Cluster.
const SlotCount = 16384

const (
	// shardedNodeTimeout is the shards' cluster-node-timeout: small, so a
	// shard marked failed is cleared soon after it answers again (after two
	// node timeouts), yet far above any pause a loaded machine causes.
	shardedNodeTimeout = 2 * time.Second
	// shardedReadyTimeout bounds each wait for the cluster to be ok: a hang
	// guard. A master that starts (or restarts) needs about 2 s of it
	// (Redis' CLUSTER_WRITABLE_DELAY).
	shardedReadyTimeout = 30 * time.Second
	shardedPollEvery    = 50 * time.Millisecond
)

// Sharded is a real Redis Cluster of masters without replicas: one
// redis-server per shard, the 16384 slots split evenly in contiguous ranges,
// shard i owning SlotRange(i).
type Sharded struct {
	c      *Cluster
	ranges [][2]int // [first, last] slot of each shard
	ids    []string // node id of each shard, stable across RestartEmpty

	mu      sync.Mutex // guards clients and closed
	clients map[*redis.ClusterClient]bool
	closed  bool
}

// StartSharded starts a Redis Cluster of shards masters (redis-server 7.0 or
// later, process backend only: REDLOCK_TEST_BACKEND is not read), assigns
// the slots with CLUSTER ADDSLOTSRANGE, joins the nodes with CLUSTER MEET and
// waits until every node reports cluster_state:ok and sees every slot served
// by its shard. opts.Backend must be empty or "process". The caller must
// Close it. ctx bounds startup only.
func StartSharded(ctx context.Context, shards int, opts Options) (*Sharded, error) {
	if shards < 1 || shards > SlotCount {
		return nil, fmt.Errorf("redistest: need 1 to %d shards, got %d", SlotCount, shards)
	}
	if opts.Backend == "" {
		opts.Backend = BackendProcess
	}
	opts.clusterNodeTimeout = shardedNodeTimeout
	c, err := Start(ctx, shards, opts)
	if err != nil {
		return nil, err
	}
	s := &Sharded{c: c, ranges: slotRanges(shards), ids: make([]string, shards), clients: map[*redis.ClusterClient]bool{}}
	if err := s.form(ctx); err != nil {
		_ = c.Close()
		return nil, err
	}
	return s, nil
}

// StartShardedT starts a sharded cluster for a test (see StartSharded) and
// closes it, with every client from NewClient, in t.Cleanup. Under -short,
// or without redis-server, it skips the test as StartT does (fails it
// without redis-server when CI=true). Server log tails are shown only if
// the test fails.
func StartShardedT(t testing.TB, shards int) *Sharded {
	t.Helper()
	if testing.Short() {
		t.Skip(SkipShort)
	}
	RedisLogsOnFailure(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*shardedReadyTimeout)
	defer cancel()
	s, err := StartSharded(ctx, shards, Options{})
	if errors.Is(err, ErrRedisServerNotFound) {
		if os.Getenv("CI") == "true" {
			t.Fatalf("redistest: %v", err)
		}
		t.Skipf("redistest: %v", err)
	}
	if err != nil {
		t.Fatalf("redistest: start %d shards: %v", shards, err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, node := range s.c.nodes {
				if tail := node.LogTail(); tail != "" {
					t.Logf("redistest: shard %d (%s) log tail:\n%s", node.index, node.Addr(), tail)
				}
			}
		}
		if err := s.Close(); err != nil {
			t.Errorf("redistest: close: %v", err)
		}
	})
	return s
}

// slotRanges splits the slots evenly into n contiguous ranges.
func slotRanges(n int) [][2]int {
	r := make([][2]int, n)
	for i := range r {
		r[i] = [2]int{i * SlotCount / n, (i+1)*SlotCount/n - 1}
	}
	return r
}

// form assigns the slots, joins the nodes and waits until the cluster is ok.
func (s *Sharded) form(ctx context.Context) error {
	for i, n := range s.c.nodes {
		cl := n.Client()
		// Distinct epochs up front, as redis-cli --cluster create does,
		// spare the nodes resolving an epoch collision after MEET.
		if err := cl.Do(ctx, "CLUSTER", "SET-CONFIG-EPOCH", i+1).Err(); err != nil {
			return fmt.Errorf("redistest: %v: cluster set-config-epoch: %w", n, err)
		}
		if err := cl.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", s.ranges[i][0], s.ranges[i][1]).Err(); err != nil {
			return fmt.Errorf("redistest: %v: cluster addslotsrange (needs redis-server 7.0 or later): %w", n, err)
		}
		id, err := cl.Do(ctx, "CLUSTER", "MYID").Text()
		if err != nil {
			return fmt.Errorf("redistest: %v: cluster myid: %w", n, err)
		}
		s.ids[i] = id
	}
	// Every node meets every earlier one: no waiting for gossip to spread.
	for i, n := range s.c.nodes {
		for _, m := range s.c.nodes[:i] {
			host, port, _ := strings.Cut(m.Addr(), ":")
			if err := n.Client().Do(ctx, "CLUSTER", "MEET", host, port, m.busPort()).Err(); err != nil {
				return fmt.Errorf("redistest: %v: cluster meet %v: %w", n, m, err)
			}
		}
	}
	return s.awaitOK(ctx)
}

// awaitOK polls every node until it reports cluster_state:ok, knows exactly
// the shards, and serves every slot from the shard it was assigned to.
func (s *Sharded) awaitOK(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, shardedReadyTimeout)
	defer cancel()
	t := time.NewTicker(shardedPollEvery)
	defer t.Stop()
	var notOK []string // why, in the last round the deadline did not cut short
	for {
		var round []string
		for i, n := range s.c.nodes {
			if why := s.nodeNotOK(ctx, i); why != "" {
				round = append(round, fmt.Sprintf("%v: %s", n, why))
			}
		}
		if len(round) == 0 {
			return nil
		}
		if ctx.Err() == nil || notOK == nil {
			notOK = round
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redistest: cluster not ok: %w; %s", ctx.Err(), strings.Join(notOK, "; "))
		case <-t.C:
		}
	}
}

// nodeNotOK says why node i does not see the cluster as formed, or "".
func (s *Sharded) nodeNotOK(ctx context.Context, i int) string {
	cl := s.c.nodes[i].Client()
	info, err := cl.ClusterInfo(ctx).Result()
	if err != nil {
		return "cluster info: " + err.Error()
	}
	fields := map[string]string{}
	for line := range strings.SplitSeq(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			fields[k] = v
		}
	}
	n := strconv.Itoa(len(s.c.nodes))
	want := [][2]string{
		{"cluster_state", "ok"},
		{"cluster_slots_assigned", strconv.Itoa(SlotCount)},
		{"cluster_slots_ok", strconv.Itoa(SlotCount)},
		{"cluster_known_nodes", n},
		{"cluster_size", n},
	}
	for _, kv := range want {
		if fields[kv[0]] != kv[1] {
			return fmt.Sprintf("%s:%s, want %s", kv[0], fields[kv[0]], kv[1])
		}
	}
	shards, err := cl.ClusterShards(ctx).Result()
	if err != nil {
		return "cluster shards: " + err.Error()
	}
	if len(shards) != len(s.ids) {
		return fmt.Sprintf("cluster shards: %d shards, want %d", len(shards), len(s.ids))
	}
	for _, sh := range shards {
		if len(sh.Nodes) != 1 {
			return fmt.Sprintf("cluster shards: a shard of %d nodes, want 1: %+v", len(sh.Nodes), sh.Nodes)
		}
		node := sh.Nodes[0]
		j := slices.Index(s.ids, node.ID)
		if j < 0 {
			return fmt.Sprintf("cluster shards: unknown node %+v", node)
		}
		r, addr := s.ranges[j], s.c.nodes[j].Addr()
		if len(sh.Slots) != 1 || sh.Slots[0].Start != int64(r[0]) || sh.Slots[0].End != int64(r[1]) ||
			node.IP+":"+strconv.FormatInt(node.Port, 10) != addr || node.Role != "master" || node.Health != "online" {
			return fmt.Sprintf("cluster shards: shard %d is %+v on %+v, want slots %d-%d on %s, an online master", j, sh.Slots, node, r[0], r[1], addr)
		}
	}
	return ""
}

// Shards is the number of shards.
func (s *Sharded) Shards() int { return len(s.c.nodes) }

// Addrs returns the "127.0.0.1:PORT" address of every shard, in shard order:
// seed addresses for redis.NewClusterClient. They are stable across
// RestartEmpty.
func (s *Sharded) Addrs() []string { return s.c.Addrs() }

// Node returns the server of shard i, for fault injection (Pause, Kill) and
// direct access. Its Restart keeps the node's cluster identity and slots but
// does not wait for the cluster to be ok again; RestartEmpty does.
func (s *Sharded) Node(shard int) *Node { return s.c.nodes[shard] }

// NodeID returns the cluster node id of shard i, stable across RestartEmpty.
func (s *Sharded) NodeID(shard int) string { return s.ids[shard] }

// SlotRange returns the first and last slot shard i serves.
func (s *Sharded) SlotRange(shard int) (first, last int) {
	return s.ranges[shard][0], s.ranges[shard][1]
}

// ShardOf returns the shard that serves key's slot (see KeySlot).
func (s *Sharded) ShardOf(key string) int {
	slot := KeySlot(key)
	i, _ := slices.BinarySearchFunc(s.ranges, slot, func(r [2]int, slot int) int {
		if r[1] < slot {
			return -1
		}
		if r[0] > slot {
			return 1
		}
		return 0
	})
	return i
}

// KeySlot returns the Redis Cluster slot of key: CRC16 (XMODEM) of its hash
// tag (the part between the first "{" and the next "}", if not empty) or
// else of the whole key, modulo 16384, as CLUSTER KEYSLOT computes it.
func KeySlot(key string) int {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if end := strings.IndexByte(key[open+1:], '}'); end > 0 {
			key = key[open+1 : open+1+end]
		}
	}
	return int(crc16(key) % SlotCount)
}

// crc16 is CRC-16/XMODEM (polynomial 0x1021, initial value 0), Redis
// Cluster's key hash.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// NewClient returns a cluster client seeded with Addrs, closed in t.Cleanup
// (or by Close). It uses the timeouts of Node.Client, and RestartEmpty waits
// until it reaches the restarted shard again.
func (s *Sharded) NewClient(t testing.TB) *redis.ClusterClient {
	t.Helper()
	cl := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:                 s.Addrs(),
		DialTimeout:           clientDialTimeout,
		ReadTimeout:           clientIOTimeout,
		WriteTimeout:          clientIOTimeout,
		DialerRetries:         1, // a killed shard fails fast, see Node.Client
		ContextTimeoutEnabled: true,
	})
	s.mu.Lock()
	closed := s.closed
	if !closed {
		s.clients[cl] = true
	}
	s.mu.Unlock()
	if closed { // asked for after Close: hand out a closed client, don't leak
		_ = cl.Close()
		return cl
	}
	t.Cleanup(func() {
		s.mu.Lock()
		mine := s.clients[cl] // not yet closed by Close
		delete(s.clients, cl)
		s.mu.Unlock()
		if mine {
			if err := cl.Close(); err != nil {
				t.Errorf("redistest: close cluster client: %v", err)
			}
		}
	})
	return cl
}

// RestartEmpty kills the server of shard i (SIGKILL) and starts it again on
// the same address with no data but with its nodes.conf, so it rejoins the
// cluster as the same node serving the same slots. It returns once every
// node reports the cluster ok again with each slot on its shard, and every
// client from NewClient reaches every shard. The keys of the other shards
// are untouched. ctx bounds the restart; the wait is also bounded by a hang
// guard of its own.
func (s *Sharded) RestartEmpty(ctx context.Context, shard int) error {
	if shard < 0 || shard >= len(s.c.nodes) {
		return fmt.Errorf("redistest: no shard %d (have %d)", shard, len(s.c.nodes))
	}
	if err := s.c.nodes[shard].Restart(ctx); err != nil {
		return err
	}
	if err := s.awaitOK(ctx); err != nil {
		return fmt.Errorf("redistest: after restarting shard %d: %w", shard, err)
	}
	return s.awaitClients(ctx)
}

// awaitClients waits until every client from NewClient pings every shard:
// go-redis stops dialing a node for a while after failed dials.
func (s *Sharded) awaitClients(ctx context.Context) error {
	s.mu.Lock()
	clients := make([]*redis.ClusterClient, 0, len(s.clients))
	for cl := range s.clients {
		clients = append(clients, cl)
	}
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, shardedReadyTimeout)
	defer cancel()
	for _, cl := range clients {
		for {
			err := cl.ForEachShard(ctx, func(ctx context.Context, c *redis.Client) error {
				return c.Ping(ctx).Err()
			})
			if err == nil || errors.Is(err, redis.ErrClosed) {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("redistest: cluster is ok but a cluster client does not reach every shard: %w (last: %v)", ctx.Err(), err)
			case <-time.After(shardedPollEvery):
			}
		}
	}
	return nil
}

// Close closes the clients from NewClient, stops every shard and removes the
// temp dir. It is idempotent.
func (s *Sharded) Close() error {
	s.mu.Lock()
	s.closed = true
	clients := s.clients
	s.clients = map[*redis.ClusterClient]bool{}
	s.mu.Unlock()
	var errs []error
	for cl := range clients {
		errs = append(errs, cl.Close())
	}
	errs = append(errs, s.c.Close())
	return errors.Join(errs...)
}
