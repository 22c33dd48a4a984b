// Package keyname is the layout of a lock key's name on the nodes, in one
// place: the client's prefix, then the key in braces, prefix{key}, so that
// the braces are a Redis Cluster hash tag. Package redlock names its keys
// with it; the lock kinds that keep several keys in one cluster slot
// (semaphore's slots) build their client keys with it.
package keyname

import "strings"

// Of is the name on the nodes of key, under prefix: prefix{key}.
func Of(prefix, key string) string { return prefix + "{" + key + "}" }

// Key is the client key that name (Of(prefix, key)) is the name of, false
// when name is no such name.
func Key(prefix, name string) (string, bool) {
	key, ok := strings.CutPrefix(name, prefix+"{")
	key, ok2 := strings.CutSuffix(key, "}")
	return key, ok && ok2
}

// Grouped is the client key of member suffix of the group tag: tag}suffix.
// Its name on the nodes, prefix{tag}suffix}, has tag as its hash tag (a
// hash tag ends at the first '}'), so every member of the group lives in
// one cluster slot. tag must not contain '{' or '}'.
func Grouped(tag, suffix string) string { return tag + "}" + suffix }
