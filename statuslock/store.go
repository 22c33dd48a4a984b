package statuslock

import (
	"context"
	"sync"
)

// Record is a service's stored status and the fence of the lock holder that
// wrote it.
type Record struct {
	ServiceID string
	Status    Status
	Fence     uint64
}

// Store keeps the status of services and refuses writes from a holder of
// the status lock that has been superseded.
//
// Set must be atomic per service: it writes status and fence only if fence
// is at least the highest fence the store has seen for the service, and
// otherwise returns an error wrapping ErrStaleFence and changes nothing. An
// equal fence is the same holder writing again and is accepted. Fences are
// the lock's (Lock.Fence, the fence argument of WithStatusLock's function):
// every acquisition of a service's lock gets a larger one, so a holder that
// was paused past its TTL (a GC pause, a VM migration) and writes after the
// next holder has written is refused instead of overwriting a newer status.
//
// Get returns an error wrapping ErrNotFound for a service never written.
type Store interface {
	Get(ctx context.Context, serviceID string) (Record, error)
	Set(ctx context.Context, serviceID string, status Status, fence uint64) error
}

// checkWrite validates the arguments of Store.Set.
func checkWrite(ctx context.Context, serviceID string, status Status, fence uint64) error {
	switch {
	case ctx == nil:
		return invalidArg("nil context")
	case serviceID == "":
		return invalidArg("empty service id")
	case !status.Valid():
		return invalidArg("unknown status %q", string(status))
	case fence == 0:
		return invalidArg("fence 0: a write must carry the fence of the lock it was made under")
	}
	return nil
}

func checkRead(ctx context.Context, serviceID string) error {
	switch {
	case ctx == nil:
		return invalidArg("nil context")
	case serviceID == "":
		return invalidArg("empty service id")
	}
	return nil
}

// MemoryStore is an in-process fenced Store, for tests, demos and
// development. It is safe for concurrent use. The zero value is ready.
type MemoryStore struct {
	mu      sync.Mutex
	records map[string]Record
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore { return &MemoryStore{} }

// Get implements Store.
func (s *MemoryStore) Get(ctx context.Context, serviceID string) (Record, error) {
	if err := checkRead(ctx, serviceID); err != nil {
		return Record{}, err
	}
	if err := ctx.Err(); err != nil {
		return Record{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.records[serviceID]
	if !ok {
		return Record{}, notFound(serviceID)
	}
	return r, nil
}

// Set implements Store.
func (s *MemoryStore) Set(ctx context.Context, serviceID string, status Status, fence uint64) error {
	if err := checkWrite(ctx, serviceID, status, fence); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, ok := s.records[serviceID]; ok && fence < cur.Fence {
		return staleFence(serviceID, status, fence, cur.Fence)
	}
	if s.records == nil {
		s.records = map[string]Record{}
	}
	s.records[serviceID] = Record{ServiceID: serviceID, Status: status, Fence: fence}
	return nil
}
