// Command redlock runs commands under a distributed lock held on a quorum of
// independent Redis nodes (the Redlock algorithm), lists the locks on those
// nodes, and demonstrates the lock on embedded nodes.
//
// Usage:
//
//	redlock exec [-n] [-w TIMEOUT] [-E CODE] [--ttl D] [--grace D] KEY -- CMD [ARGS...]
//	redlock ls [PATTERN]
//	redlock inspect KEY
//	redlock unlock --force [--yes] KEY
//	redlock demo [--duration D]
//	redlock help [COMMAND]
//
// The nodes are given with --nodes host:port,host:port,... (or redis://
// URLs) or the REDLOCK_NODES environment variable. exec and ls need them:
// there is no in-memory fallback, since a lock held in one process excludes
// nobody else. demo runs on five embedded memory nodes unless nodes are given.
//
// # exec
//
// exec acquires KEY on a majority of the nodes, runs CMD with REDLOCK_KEY
// (the key) and REDLOCK_FENCE (the fencing token: greater than that of every
// earlier holder of KEY) in its environment, keeps the lock alive while CMD
// runs, and releases it when CMD exits. Its conventions follow flock(1),
// etcdctl lock and consul lock:
//
//   - Without -n or -w it waits for the lock as long as it takes.
//   - -n gives up at once if another holder has the lock; -w TIMEOUT gives
//     up after TIMEOUT. Both exit 1, or the code given with -E, without
//     running CMD.
//   - --ttl (default 10s) is the lock's time to live. The client's watchdog
//     extends the lock while CMD runs, once a third of the TTL (at least
//     500ms) or less remains; if a process dies without releasing, others
//     get the lock after at most the TTL.
//   - If the lock is lost while CMD runs (the nodes forgot it, or too many
//     became unreachable for it to be extended), CMD gets SIGTERM, then
//     SIGKILL after --grace (default 5s), and redlock exits 4.
//   - SIGINT, SIGTERM and SIGHUP sent to redlock are passed on to CMD.
//   - Unless stdin is a terminal, CMD runs in a process group of its own and
//     the signals go to the whole group (a shell and what it started), as
//     with consul lock. On Linux CMD also gets SIGTERM if redlock itself
//     dies, since nobody extends the lock then.
//
// A typical cron line on every replica:
//
//	redlock exec -n cron:penalties -- ./calculate-penalties
//
// # ls
//
// ls lists the locks held on the nodes whose key (without the "lock:"
// prefix) matches the glob PATTERN (default *): key, the holder's token
// prefix, the fence, the remaining TTL on each node, and whether a majority
// of nodes agrees on the holder (only then is the lock actually held).
//
// # inspect and unlock
//
// inspect shows who holds KEY as a majority of the nodes says: owner
// (host/pid/program by default), acquisition time, fence, the time a
// majority keeps it, whether the nodes agree, and each node's view.
// unlock --force evicts a holder that is gone or stuck, after confirmation
// on a terminal (or with --yes; without a terminal and without --yes it
// refuses): it deletes the lock on a majority only if the holder is still
// the one shown, and raises the fence counter so that the next holder's
// fence is larger and the evicted holder's late writes are refused by a
// fenced store.
//
// # demo
//
// demo lets simulated replicas (an API, a worker and a reconciler each)
// contend for the status locks of a few services, stops one node midway,
// pauses one holder past its TTL so that its late write is refused by the
// fenced status store, and prints a summary: acquisitions, wait times,
// extensions, refused stale writes, overlaps (always 0) and the final
// statuses. It needs no Redis server.
//
// # Exit codes
//
//	0    success (exec: CMD exited 0)
//	1    exec: the lock is held elsewhere (-n) or -w timed out (see -E);
//	     demo: a safety check failed;
//	     unlock: not held, held by another holder, or not confirmed
//	2    usage error: bad flag, missing KEY or CMD, bad --nodes
//	3    too few nodes reachable for a quorum
//	4    exec: the lock was lost while CMD ran; CMD was terminated
//	126  exec: CMD is not executable
//	127  exec: CMD not found
//	128+N  CMD (or redlock, while waiting) died by signal N
//	other  exec: the exit status of CMD, passed through
//
// CMD's own exit status is passed through unchanged, so a CMD that can exit
// 1 to 4 by itself is ambiguous with redlock's codes: use -E to move the
// conflict code, and read redlock's one-line message on stderr.
package main

const usageMain = `redlock: run commands under a distributed lock on a quorum of Redis nodes

Usage:
  redlock exec [-n] [-w TIMEOUT] [-E CODE] [--ttl D] [--grace D] KEY -- CMD [ARGS...]
  redlock ls [PATTERN]
  redlock inspect KEY
  redlock unlock --force [--yes] KEY
  redlock demo [--duration D]
  redlock help [COMMAND]

Nodes: --nodes host:port,host:port,... or REDLOCK_NODES (required for exec, ls, inspect, unlock;
demo runs on 5 embedded memory nodes without them).

Exit codes:
  0      success (exec: CMD exited 0)
  1      exec: lock held elsewhere (-n) or wait timed out (-w); override with -E
         demo: a safety check failed; unlock: not held or not confirmed
  2      usage error
  3      too few nodes reachable for a quorum
  4      exec: lock lost while CMD ran (CMD got SIGTERM, then SIGKILL after --grace)
  126    exec: CMD not executable
  127    exec: CMD not found
  128+N  CMD (or redlock while waiting) died by signal N
  other  exec: CMD's own exit status, passed through
`

const usageExec = `Usage: redlock exec [flags] KEY -- CMD [ARGS...]

Acquire KEY on a majority of the nodes, run CMD while holding it, release it.
CMD gets REDLOCK_KEY and REDLOCK_FENCE (a fencing token greater than that of
every earlier holder) in its environment. The lock is extended while a third
of the TTL remains; if it is lost anyway, CMD gets SIGTERM, then SIGKILL after --grace,
and redlock exits 4. SIGINT, SIGTERM and SIGHUP are passed on to CMD (to its
process group unless stdin is a terminal).

Flags:
  -n             fail at once if the lock is held elsewhere (exit 1, or -E)
  -w TIMEOUT     give up after waiting TIMEOUT, e.g. 30s (exit 1, or -E)
  -E CODE        exit code for -n conflicts and -w timeouts (default 1)
  --ttl D        lock time to live (default 10s)
  --grace D      time between SIGTERM and SIGKILL on lock loss (default 5s)
  --prefix P     key prefix on the nodes (default "lock:")
  --nodes LIST   host:port,host:port,... (default $REDLOCK_NODES; required)

Exit codes: CMD's own; 1 conflict or timeout (-E); 2 usage; 3 nodes
unreachable; 4 lock lost; 126 not executable; 127 not found; 128+N signal N.
`

const usageLs = `Usage: redlock ls [flags] [PATTERN]

List the locks on the nodes whose key (without the prefix) matches the glob
PATTERN (default *): key, holder token prefix, fence, remaining TTL on each
node, and whether a majority of the nodes agrees on the holder.

Flags:
  --prefix P     key prefix on the nodes (default "lock:")
  --nodes LIST   host:port,host:port,... (default $REDLOCK_NODES; required)

Exit codes: 0 listed; 2 usage; 3 nodes unreachable.
`

const usageDemo = `Usage: redlock demo [flags]

Simulated replicas (an API, a worker and a reconciler each) contend for the
status locks of a few services. One node is stopped midway, one holder is
paused past its TTL (its late write must be refused by the fenced store).
Prints live progress, then a summary: acquisitions, wait p50/p99, extensions,
fenced rejections, overlaps (must be 0) and the final statuses.

Flags:
  --duration D   length of the run (default 10s)
  --replicas N   simulated replicas (default 3)
  --services N   services whose status is locked (default 3)
  --ttl D        status lock TTL (default 500ms)
  --nodes LIST   run on these Redis nodes instead of 5 embedded memory nodes
                 (default $REDLOCK_NODES; a real node is not stopped midway)

Exit codes: 0 run passed its safety checks; 1 a check failed (an overlap, or an
accepted stale write); 2 usage; 3 nodes unreachable.
`
