package redlock

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// extendHeldScript is the batch extension: reset the TTL of KEYS[1] if it
// holds our token (1), otherwise change nothing (0). Unlike extendScript it
// never re-creates a missing key: a batch that reaches a node late (after
// its round gave up on the node, after Release returned) must not bring a
// released lock back.
var extendHeldScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
`)

// ExtendBatch implements BatchNode: every op's extension in one pipeline
// (EVALSHA), one round trip. Ops that met NOSCRIPT (the server
// restarted and lost its script cache) are sent again after SCRIPT LOAD, or
// with EVAL if the load failed. A client that cannot pipeline (a
// bare redis.Scripter) gets one call per op.
func (n *RedisNode) ExtendBatch(ctx context.Context, ops []ExtendOp) ([]ExtendResult, []error) {
	res, errs := make([]ExtendResult, len(ops)), make([]error, len(ops))
	p, ok := n.client.(interface{ Pipeline() redis.Pipeliner })
	if !ok {
		for i, op := range ops {
			v, err := extendHeldScript.Run(ctx, n.client, []string{op.Key}, op.Token, op.TTL.Milliseconds()).Int64()
			res[i], errs[i] = ExtendResult(v), err
		}
		return res, errs
	}
	run := func(idx []int, eval bool) (noscript []int) {
		pipe := p.Pipeline()
		cmds := make([]*redis.Cmd, len(idx))
		for k, i := range idx {
			op := ops[i]
			args := []any{op.Token, op.TTL.Milliseconds()}
			if eval {
				cmds[k] = extendHeldScript.Eval(ctx, pipe, []string{op.Key}, args...)
			} else {
				cmds[k] = extendHeldScript.EvalSha(ctx, pipe, []string{op.Key}, args...)
			}
		}
		_, _ = pipe.Exec(ctx) // errors are per command
		for k, i := range idx {
			v, err := cmds[k].Int64()
			if !eval && redis.HasErrorPrefix(err, "NOSCRIPT") {
				noscript = append(noscript, i)
				continue
			}
			res[i], errs[i] = ExtendResult(v), err
			if err != nil {
				res[i] = NotHeld
			}
		}
		return noscript
	}
	all := make([]int, len(ops))
	for i := range all {
		all[i] = i
	}
	if again := run(all, false); len(again) > 0 {
		// Load the script once, then EVALSHA again; EVAL (which sends the
		// script with every op) only if the load failed.
		if extendHeldScript.Load(ctx, n.client).Err() == nil {
			again = run(again, false)
		}
		if len(again) > 0 {
			run(again, true)
		}
	}
	return res, errs
}
