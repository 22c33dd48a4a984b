package memnode

// MemoryEntries counts m's entries, expired ones not yet swept included.
func MemoryEntries(m *Node) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.locks) + len(m.counters) + len(m.tombstones) + len(m.trails)
}
