package redlock

import "github.com/quorumlock/quorumlock/node"

// releasedLocally wakes this client's next waiter for key (its full name)
// as soon as our own Release succeeded, without waiting for the nodes'
// announcement to travel through Pub/Sub: within one process the handoff
// then costs no extra round trip. The nodes' announcements of the same
// release carry the same id and wake no one else.
func (c *Client) releasedLocally(key, token string) {
	if c.cfg.noNotify {
		return
	}
	h := &c.notify
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || h.queues == nil {
		return
	}
	if q := h.queues[key]; q != nil {
		h.announce(q, node.ReleaseID(token))
	}
}
