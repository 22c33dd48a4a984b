package redlock

import (
	"context"
	"fmt"
	"time"
)

// checkArgs validates what every lock operation takes.
func (c *Client) checkArgs(ctx context.Context, key string, ttl time.Duration) error {
	if err := checkKey(ctx, key); err != nil {
		return err
	}
	return c.checkTTL(ttl)
}

// MaxKeyLength is the longest key, in bytes without the prefix, a call takes.
const MaxKeyLength = 1024

// checkKey validates the context and key of every operation on a key.
func checkKey(ctx context.Context, key string) error {
	switch {
	case ctx == nil:
		return invalidArg("nil context")
	case key == "":
		return fmt.Errorf("%w: empty key", ErrInvalidArgument)
	case len(key) > MaxKeyLength:
		// Not quoted whole: the error would carry it into every log line.
		return fmt.Errorf("%w: key of %d bytes (%.32q...) is longer than %d bytes", ErrInvalidArgument, len(key), key, MaxKeyLength)
	case key[0] == '}':
		// prefix{}...}: an empty Redis Cluster hash tag would split the
		// key from its counter.
		return fmt.Errorf("%w: key %q starts with '}'", ErrInvalidArgument, key)
	}
	return nil
}

// checkTTL refuses a TTL too short for the drift and the node timeout it
// implies, or longer than the recovery period.
func (c *Client) checkTTL(ttl time.Duration) error {
	if ttl <= 0 {
		return invalidArg("ttl %s is not positive", ttl)
	}
	if need := c.cfg.drift(ttl) + c.cfg.timeoutFor(ttl); ttl <= need {
		return invalidArg("ttl %s leaves no validity after drift %s and node timeout %s", ttl, c.cfg.drift(ttl), c.cfg.timeoutFor(ttl))
	}
	return c.cfg.checkRecoveryTTL(ttl)
}

// checkRecoveryTTL refuses a TTL the recovery period does not cover.
func (c *config) checkRecoveryTTL(ttl time.Duration) error {
	if c.recovery > 0 && ttl > c.recovery {
		return invalidArg("ttl %s is longer than the recovery period %s (raise it with WithRecoveryPeriod)", ttl, c.recovery)
	}
	return nil
}
