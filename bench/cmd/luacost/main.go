// Command luacost measures what each call of a lock cycle costs one
// redis-server, by the server's own count: INFO commandstats' microseconds
// per call, the commands a script runs included. It starts one server,
// runs each case on -n keys (pipelined, so that the client's pace does not
// matter), and prints the median and range over -reps repetitions, beside
// a plain Redlock's SET NX PX and compare-and-delete script.
//
//	cd bench && go run ./cmd/luacost [-n 20000] [-reps 5]
//
// Cases: the acquire script on a key used before (released: the record
// keeps its counter), on a new key, and on a key another token holds (a
// TryAcquire's refusal, and a waiting Acquire's first refusal, which marks
// the holding); the release script; a script that returns at once with the
// acquire's arguments (what any script call costs); the plain Redlock's two
// calls.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/internal/wire"
	"github.com/quorumlock/quorumlock/node"
	"github.com/redis/go-redis/v9"
)

const plainRelease = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`

const token = "0123456789abcdef0123456789abcdef"

func main() {
	n := flag.Int("n", 20000, "calls per case and repetition")
	reps := flag.Int("reps", 5, "repetitions")
	flag.Parse()
	if err := run(*n, *reps); err != nil {
		fmt.Fprintln(os.Stderr, "luacost:", err)
		os.Exit(1)
	}
}

// call is one command of a case, for key i.
type call func(i int) []any

type lockCase struct {
	name  string
	setup func(ctx context.Context, rc *redis.Client, n int) error // before each repetition
	call  call
	stat  string // the commandstats entry that counts the call
}

func run(n, reps int) error {
	ctx := context.Background()
	cl, err := redistest.Start(ctx, 1, redistest.Options{})
	if err != nil {
		return err
	}
	defer cl.Close()
	rc := cl.Nodes()[0].Client()
	s := wire.Scripts()
	shas := make([]string, 4)
	for k, src := range []string{s.Acquire, s.Release, "return 0", plainRelease} {
		if shas[k], err = rc.ScriptLoad(ctx, src).Result(); err != nil {
			return fmt.Errorf("script load: %w", err)
		}
	}
	acq, rel, empty, plain := shas[0], shas[1], shas[2], shas[3]
	name := func(i int) string { return "luacost:" + strconv.Itoa(i) }
	acquire := func(waiter bool) call {
		return func(i int) []any {
			keys, argv := wire.AcquireScriptArgs(node.AcquireArgs{Name: name(i), Token: token, TTL: 10 * time.Second,
				Seed: uint64(time.Now().UnixMicro()), At: time.Now(), Owner: "luacost", Waiter: waiter, Recovery: time.Minute}, false)
			return evalsha(acq, keys, argv)
		}
	}
	release := func(i int) []any {
		keys, argv := wire.ReleaseScriptArgs(node.ReleaseArgs{Name: name(i), Token: token})
		return evalsha(rel, keys, argv)
	}
	other := func(i int) []any { // held by another token
		keys, argv := wire.AcquireScriptArgs(node.AcquireArgs{Name: name(i), Token: "another" + token[7:], TTL: 10 * time.Second,
			Seed: uint64(time.Now().UnixMicro()), Owner: "luacost", Recovery: time.Minute}, false)
		return evalsha(acq, keys, argv)
	}
	flush := func(ctx context.Context, rc *redis.Client, n int) error {
		var keys []string
		for i := range n {
			keys = append(keys, name(i))
		}
		for c := range slices.Chunk(keys, 1000) {
			if err := rc.Del(ctx, c...).Err(); err != nil {
				return err
			}
		}
		return nil
	}
	prepare := func(steps ...call) func(ctx context.Context, rc *redis.Client, n int) error {
		return func(ctx context.Context, rc *redis.Client, n int) error {
			if err := flush(ctx, rc, n); err != nil {
				return err
			}
			for _, st := range steps {
				if err := pipeline(ctx, rc, n, st); err != nil {
					return err
				}
			}
			return nil
		}
	}
	cases := []lockCase{
		{"acquire script, a key used before", prepare(acquire(false), release), acquire(false), "evalsha"},
		{"acquire script, a new key", prepare(), acquire(false), "evalsha"},
		{"acquire script, held by another (TryAcquire)", prepare(other), acquire(false), "evalsha"},
		{"acquire script, held by another (Acquire: marks once)", prepare(other), acquire(true), "evalsha"},
		{"release script", prepare(acquire(false)), release, "evalsha"},
		{"a script that returns at once, the acquire's arguments", prepare(), func(i int) []any {
			keys, argv := wire.AcquireScriptArgs(node.AcquireArgs{Name: name(i), Token: token, TTL: 10 * time.Second, Owner: "luacost", Recovery: time.Minute}, false)
			return evalsha(empty, keys, argv)
		}, "evalsha"},
		{"plain Redlock: SET NX PX", prepare(), func(i int) []any { return []any{"set", name(i), token, "nx", "px", 10000} }, "set"},
		{"plain Redlock: compare-and-delete script", prepare(func(i int) []any { return []any{"set", name(i), token, "px", 10000} }),
			func(i int) []any { return []any{"evalsha", plain, 1, name(i), token} }, "evalsha"},
	}
	fmt.Printf("server time per call, µs (INFO commandstats, commands inside a script included); %d calls, median and range of %d repetitions\n\n", n, reps)
	fmt.Printf("| %-55s | %-6s | %-13s | %s |\n", "call", "median", "range", "commands inside")
	fmt.Printf("|%s|%s|%s|%s|\n", strings.Repeat("-", 57), strings.Repeat("-", 8), strings.Repeat("-", 15), strings.Repeat("-", 17))
	for _, c := range cases {
		var us []float64
		inner := 0.0
		for range reps {
			if err := c.setup(ctx, rc, n); err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
			if err := rc.ConfigResetStat(ctx).Err(); err != nil {
				return err
			}
			if err := pipeline(ctx, rc, n, c.call); err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
			st, err := commandStats(ctx, rc)
			if err != nil {
				return err
			}
			us = append(us, st[c.stat].usec/float64(st[c.stat].calls))
			inner = 0
			for name, e := range st {
				if name != c.stat && name != "config|resetstat" {
					inner += float64(e.calls) / float64(n)
				}
			}
		}
		slices.Sort(us)
		fmt.Printf("| %-55s | %6.2f | %5.2f – %5.2f | %15.2f |\n", c.name, us[len(us)/2], us[0], us[len(us)-1], inner)
	}
	return nil
}

func evalsha(sha string, keys, argv []string) []any {
	out := []any{"evalsha", sha, len(keys)}
	for _, k := range keys {
		out = append(out, k)
	}
	for _, a := range argv {
		out = append(out, a)
	}
	return out
}

// pipeline sends c for keys 0..n-1, 100 to a round trip, and fails on any
// error reply.
func pipeline(ctx context.Context, rc *redis.Client, n int, c call) error {
	for start := 0; start < n; start += 100 {
		p := rc.Pipeline()
		for i := start; i < min(start+100, n); i++ {
			p.Do(ctx, c(i)...)
		}
		cmds, err := p.Exec(ctx)
		if err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
		for _, cmd := range cmds {
			if err := cmd.Err(); err != nil && !errors.Is(err, redis.Nil) {
				return err
			}
		}
	}
	return nil
}

type stat struct {
	calls int
	usec  float64
}

// commandStats parses INFO commandstats.
func commandStats(ctx context.Context, rc *redis.Client) (map[string]stat, error) {
	info, err := rc.Info(ctx, "commandstats").Result()
	if err != nil {
		return nil, err
	}
	out := map[string]stat{}
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		var s stat
		for _, f := range strings.Split(rest, ",") {
			k, v, _ := strings.Cut(f, "=")
			switch k {
			case "calls":
				s.calls, _ = strconv.Atoi(v)
			case "usec":
				s.usec, _ = strconv.ParseFloat(v, 64)
			}
		}
		out[strings.TrimPrefix(name, "cmdstat_")] = s
	}
	return out, nil
}
