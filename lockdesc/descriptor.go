package lockdesc

import (
	"errors"
	"fmt"
	"strings"

	"github.com/quorumlock/quorumlock/redlock"
)

var (
	// ErrInvalidArgument: a bad descriptor, key, pattern, policy or option.
	ErrInvalidArgument = errors.New("lockdesc: invalid argument")
	// ErrPolicy: a policy refuses the request (TTL above the maximum, or a
	// kind the subject may not use). Nothing was locked.
	ErrPolicy = errors.New("lockdesc: refused by policy")
	// ErrKindUnsupported: a shared lock was asked for and the Manager has no
	// RWLocker. Nothing was locked.
	ErrKindUnsupported = errors.New("lockdesc: lock kind not supported")
)

func invalidArg(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidArgument}, args...)...)
}

// Kind is how a lock behaves.
type Kind string

const (
	Exclusive Kind = "exclusive" // one holder
	Shared    Kind = "shared"    // many readers, no writer (needs an RWLocker)
)

func (k Kind) valid() bool { return k == Exclusive || k == Shared }

// Descriptor says what a lock protects.
type Descriptor struct {
	Kind      Kind     // "" means Exclusive
	Subject   string   // what: "consolidation-job", "page", "schema"
	Predicate string   // the action: "triggering", "extracting", "reading"
	Resources []string // which: "fs-abc123", "VA-IRRL-LIN"; at least one
}

func (d Descriptor) kind() Kind {
	if d.Kind == "" {
		return Exclusive
	}
	return d.Kind
}

// Validate says what is wrong with d, or nil: an unknown kind, an empty part,
// no resource, or a key longer than redlock.MaxKeyLength.
func (d Descriptor) Validate() error {
	if !d.kind().valid() {
		return invalidArg("unknown kind %q", string(d.Kind))
	}
	if d.Subject == "" || d.Predicate == "" {
		return invalidArg("empty subject or predicate")
	}
	if len(d.Resources) == 0 {
		return invalidArg("no resource")
	}
	for i, r := range d.Resources {
		if r == "" {
			return invalidArg("resource %d is empty", i)
		}
	}
	if n := len(d.kind()) + 1 + len(d.resource()); n > redlock.MaxKeyLength {
		return fmt.Errorf("%w: key of %d bytes is longer than %d bytes (%w)", ErrInvalidArgument, n, redlock.MaxKeyLength, redlock.ErrInvalidArgument)
	}
	return nil
}

// Key is the lock's key: kind:subject:predicate:resource..., each part
// escaped.
func (d Descriptor) Key() (string, error) {
	if err := d.Validate(); err != nil {
		return "", err
	}
	return string(d.kind()) + ":" + d.Resource(), nil
}

// Resource is the key without the kind: what a read-write lock locks for
// both kinds. It is "" for an invalid d.
func (d Descriptor) Resource() string {
	if d.Validate() != nil {
		return ""
	}
	return d.resource()
}

// resource is Resource without the check.
func (d Descriptor) resource() string {
	parts := []string{escape(d.Subject), escape(d.Predicate)}
	for _, r := range d.Resources {
		parts = append(parts, escape(r))
	}
	return strings.Join(parts, ":")
}

// Parse reads a key that Key built.
func Parse(key string) (Descriptor, error) {
	parts := strings.Split(key, ":")
	if len(parts) < 4 {
		return Descriptor{}, invalidArg("key %q: want kind:subject:predicate:resource...", key)
	}
	for i, p := range parts {
		u, err := unescape(p)
		if err != nil {
			return Descriptor{}, invalidArg("key %q: part %d: %v", key, i, err)
		}
		parts[i] = u
	}
	d := Descriptor{Kind: Kind(parts[0]), Subject: parts[1], Predicate: parts[2], Resources: parts[3:]}
	if d.Kind == "" {
		return Descriptor{}, invalidArg("key %q: empty kind", key)
	}
	if err := d.Validate(); err != nil {
		return Descriptor{}, fmt.Errorf("key %q: %w", key, err)
	}
	return d, nil
}

// special are the bytes written %XX inside a part.
const special = "%:*?[]\\"

func escape(s string) string {
	if !strings.ContainsAny(s, special) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(special, s[i]) >= 0 {
			fmt.Fprintf(&b, "%%%02X", s[i])
		} else {
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

func unescape(s string) (string, error) {
	if strings.ContainsAny(s, "*?[]\\") {
		return "", errors.New("unescaped glob character")
	}
	if !strings.Contains(s, "%") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) {
			return "", fmt.Errorf("truncated escape in %q", s)
		}
		c, ok := unhex(s[i+1 : i+3])
		if !ok || strings.IndexByte(special, c) < 0 {
			return "", fmt.Errorf("bad escape %q in %q", s[i:i+3], s)
		}
		b.WriteByte(c)
		i += 2
	}
	return b.String(), nil
}

// unhex reads two upper-case hex digits (the only form escape writes).
func unhex(h string) (byte, bool) {
	var c byte
	for i := 0; i < 2; i++ {
		d := h[i]
		switch {
		case '0' <= d && d <= '9':
			d -= '0'
		case 'A' <= d && d <= 'F':
			d -= 'A' - 10
		default:
			return 0, false
		}
		c = c<<4 | d
	}
	return c, true
}
