package lockdesc

import (
	"slices"
	"strings"
)

// Pattern selects descriptors: empty fields match anything.
type Pattern struct {
	Kind      Kind
	Subject   string
	Predicate string
	// Resources are the leading resources, in order; an empty element
	// matches any resource at its position.
	Resources []string
	// Resource, when set, must be one of the descriptor's resources, at any
	// position.
	Resource string
}

// Validate says what is wrong with p, or nil.
func (p Pattern) Validate() error {
	if p.Kind != "" && !p.Kind.valid() {
		return invalidArg("unknown kind %q", string(p.Kind))
	}
	return nil
}

// Glob is a Redis glob matched by the key of every descriptor that p
// matches (and possibly by other keys: Match decides).
func (p Pattern) Glob() string {
	part := func(s string) string {
		if s == "" {
			return "*"
		}
		return escape(s)
	}
	g := part(string(p.Kind)) + ":" + part(p.Subject) + ":" + part(p.Predicate) + ":"
	if p.Resource != "" {
		return g + "*" + escape(p.Resource) + "*"
	}
	for _, r := range p.Resources {
		g += part(r) + ":"
	}
	return strings.TrimSuffix(g, ":") + "*"
}

// Match reports whether d is selected by p.
func (p Pattern) Match(d Descriptor) bool {
	switch {
	case p.Kind != "" && p.Kind != d.kind(),
		p.Subject != "" && p.Subject != d.Subject,
		p.Predicate != "" && p.Predicate != d.Predicate,
		len(p.Resources) > len(d.Resources),
		p.Resource != "" && !slices.Contains(d.Resources, p.Resource):
		return false
	}
	for i, r := range p.Resources {
		if r != "" && r != d.Resources[i] {
			return false
		}
	}
	return true
}
