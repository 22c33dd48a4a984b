package lockmetrics

import (
	"fmt"
	"strings"
	"sync"

	"github.com/quorumlock/quorumlock/redlock"
)

// DefaultMaxClasses bounds the classes one Recorder labels; keys of further
// classes are counted under OtherClass.
const DefaultMaxClasses = 100

// OtherClass labels the keys of classes beyond the bound.
const OtherClass = "other"

// DefaultClass is the part of key before the first ':' (the whole key when
// it has none): "status:billing" is "status".
func DefaultClass(key string) string {
	class, _, _ := strings.Cut(key, ":")
	return class
}

// Classes groups keys into a bounded set of label values: the first max
// distinct values of of(key) are kept, later ones become OtherClass, so the
// number of series stays bounded whatever the keys and the function are.
type Classes struct {
	of   func(string) string
	max  int
	seen sync.Map // class -> struct{}
	mu   sync.Mutex
	n    int
}

// NewClasses returns Classes over of (nil: DefaultClass) keeping at most max
// classes (0: DefaultMaxClasses).
func NewClasses(of func(string) string, max int) (*Classes, error) {
	if max < 0 {
		return nil, fmt.Errorf("%w: max classes %d is negative", redlock.ErrInvalidArgument, max)
	}
	if of == nil {
		of = DefaultClass
	}
	if max == 0 {
		max = DefaultMaxClasses
	}
	return &Classes{of: of, max: max}, nil
}

// Of returns key's class label.
func (c *Classes) Of(key string) string {
	class := c.of(key)
	if _, ok := c.seen.Load(class); ok {
		return class
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.seen.Load(class); ok {
		return class
	}
	if c.n >= c.max {
		return OtherClass
	}
	c.n++
	c.seen.Store(class, struct{}{})
	return class
}
