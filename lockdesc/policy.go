package lockdesc

import (
	"fmt"
	"slices"
	"time"
)

// Policy limits the locks of a subject (and predicate).
type Policy struct {
	Subject   string        // required
	Predicate string        // "" for every predicate of the subject
	MaxTTL    time.Duration // 0: no limit
	Kinds     []Kind        // nil: every kind
}

func (p Policy) validate() error {
	if p.Subject == "" {
		return invalidArg("policy without subject")
	}
	if p.MaxTTL < 0 {
		return invalidArg("policy %s: negative MaxTTL", p.Subject)
	}
	for _, k := range p.Kinds {
		if !k.valid() {
			return invalidArg("policy %s: unknown kind %q", p.Subject, string(k))
		}
	}
	return nil
}

func (p Policy) appliesTo(d Descriptor) bool {
	return p.Subject == d.Subject && (p.Predicate == "" || p.Predicate == d.Predicate)
}

// check returns an ErrPolicy error when d with ttl breaks p.
func (p Policy) check(d Descriptor, ttl time.Duration) error {
	scope := p.Subject
	if p.Predicate != "" {
		scope += ":" + p.Predicate
	}
	if p.MaxTTL > 0 && ttl > p.MaxTTL {
		return fmt.Errorf("%w: %s: ttl %v above the maximum %v", ErrPolicy, scope, ttl, p.MaxTTL)
	}
	if p.Kinds != nil && !slices.Contains(p.Kinds, d.kind()) {
		return fmt.Errorf("%w: %s: kind %s not allowed (allowed: %v)", ErrPolicy, scope, d.kind(), p.Kinds)
	}
	return nil
}
