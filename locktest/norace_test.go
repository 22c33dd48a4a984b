//go:build !race

package locktest_test

const raceEnabled = false
