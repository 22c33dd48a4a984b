package harness

import (
	"slices"
	"strconv"
	"strings"
)

// CommandCalls sums the calls of every command in the text of INFO
// commandstats ("cmdstat_get:calls=3,usec=..."), skipping the commands
// named in skip (e.g. "info", the harness's own probe). Redis counts the
// commands a script runs (redis.call) there as well as the EVAL or EVALSHA
// itself, so this is the server's whole command work.
func CommandCalls(info string, skip ...string) int64 {
	var total int64
	for _, line := range strings.Split(info, "\n") {
		name, stats, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		cmd, ok := strings.CutPrefix(name, "cmdstat_")
		if !ok || slices.Contains(skip, cmd) {
			continue
		}
		for _, kv := range strings.Split(stats, ",") {
			if v, ok := strings.CutPrefix(kv, "calls="); ok {
				n, err := strconv.ParseInt(v, 10, 64)
				if err == nil {
					total += n
				}
			}
		}
	}
	return total
}
