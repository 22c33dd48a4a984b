package redisnode

// WithDialHook calls f with the address of every dial of the nodes' clients.
func WithDialHook(f func(addr string)) DialOption { return func(c *dialConfig) { c.onDial = f } }
