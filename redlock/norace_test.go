//go:build !race

package redlock_test

// raceEnabled: the race detector makes every step several times slower.
const raceEnabled = false
