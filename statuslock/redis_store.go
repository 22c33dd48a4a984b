package statuslock

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// DefaultStoreKeyPrefix is the default prefix of a RedisStore's hashes.
const DefaultStoreKeyPrefix = "service:"

// RedisStore is a fenced Store on one Redis server: one HASH per service,
// named prefix+serviceID, with the fields "status" and "fence". The
// compare-and-set of Set runs in a Lua script, so it is atomic on the server.
//
// The store is the resource the lock protects, not a lock node: use a
// server (or a replicated primary) that holds your data, not one of the
// independent lock nodes.
type RedisStore struct {
	client redis.Scripter
	prefix string
}

// NewRedisStore returns a store on the go-redis client (any redis.Scripter:
// *redis.Client, *redis.ClusterClient, *redis.Ring). prefix names the
// hashes; "" means DefaultStoreKeyPrefix.
func NewRedisStore(client redis.Scripter, prefix string) (*RedisStore, error) {
	if client == nil || isNilPointer(client) {
		return nil, invalidArg("nil redis client")
	}
	if prefix == "" {
		prefix = DefaultStoreKeyPrefix
	}
	return &RedisStore{client: client, prefix: prefix}, nil
}

// Key is the name of the service's hash.
func (s *RedisStore) Key(serviceID string) string { return s.prefix + serviceID }

// Fences are compared as decimal strings (shorter is smaller, then
// lexically), so the full uint64 range is exact; Lua numbers are doubles.
//
// Reply: {1} written; {0, current fence} refused.
var setScript = redis.NewScript(`
local function less(a, b)
  if #a ~= #b then return #a < #b end
  return a < b
end
local cur = redis.call('HGET', KEYS[1], 'fence')
if cur and less(ARGV[2], cur) then
  return {0, cur}
end
redis.call('HSET', KEYS[1], 'status', ARGV[1], 'fence', ARGV[2])
return {1}
`)

var getScript = redis.NewScript(`return redis.call('HMGET', KEYS[1], 'status', 'fence')`)

// Get implements Store.
func (s *RedisStore) Get(ctx context.Context, serviceID string) (Record, error) {
	if err := checkRead(ctx, serviceID); err != nil {
		return Record{}, err
	}
	vals, err := getScript.Run(ctx, s.client, []string{s.Key(serviceID)}).Slice()
	if err != nil {
		return Record{}, fmt.Errorf("statuslock: get %q: %w", serviceID, err)
	}
	if len(vals) != 2 || vals[0] == nil {
		return Record{}, notFound(serviceID)
	}
	st, _ := vals[0].(string)
	fs, _ := vals[1].(string)
	fence, err := strconv.ParseUint(fs, 10, 64)
	if err != nil {
		return Record{}, fmt.Errorf("statuslock: get %q: bad fence %q in %s: %w", serviceID, fs, s.Key(serviceID), err)
	}
	return Record{ServiceID: serviceID, Status: Status(st), Fence: fence}, nil
}

// Set implements Store.
func (s *RedisStore) Set(ctx context.Context, serviceID string, status Status, fence uint64) error {
	if err := checkWrite(ctx, serviceID, status, fence); err != nil {
		return err
	}
	vals, err := setScript.Run(ctx, s.client, []string{s.Key(serviceID)}, string(status), strconv.FormatUint(fence, 10)).Slice()
	if err != nil {
		return fmt.Errorf("statuslock: set %q: %w", serviceID, err)
	}
	if len(vals) >= 1 && vals[0] == int64(1) {
		return nil
	}
	if len(vals) == 2 {
		cs, _ := vals[1].(string)
		if cur, perr := strconv.ParseUint(cs, 10, 64); perr == nil {
			return staleFence(serviceID, status, fence, cur)
		}
	}
	return fmt.Errorf("statuslock: set %q: unexpected reply %v", serviceID, vals)
}

func staleFence(serviceID string, status Status, fence, current uint64) error {
	return fmt.Errorf("%w: set %q to %s with fence %d: the record has fence %d from a newer holder", ErrStaleFence, serviceID, status, fence, current)
}

func notFound(serviceID string) error {
	return fmt.Errorf("%w: %q", ErrNotFound, serviceID)
}
