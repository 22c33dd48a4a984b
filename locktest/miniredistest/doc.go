// Package miniredistest runs the node conformance suite (node/nodetest) on
// the Redis node over go-redis clients pointed at miniredis servers
// (github.com/alicebob/miniredis/v2), and a redlock client over three of
// them. It is a module of its own so that miniredis never reaches the
// library's requirements. See README.md for what passes.
package miniredistest
