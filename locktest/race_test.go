//go:build race

package locktest_test

// raceEnabled: the race detector slows schedules tenfold; tests run fewer.
const raceEnabled = true
