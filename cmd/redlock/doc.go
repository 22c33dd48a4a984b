// Command redlock runs commands under a distributed lock held on a quorum of
// independent Redis nodes (the Redlock algorithm), lists the locks on those
// nodes, checks that the nodes can carry a lock, and demonstrates the lock
// on embedded nodes.
//
// Usage:
//
//	redlock exec [-n] [-w TIMEOUT] [-E CODE] [--ttl D] [--grace D] [--owner S] [--slots N] KEY -- CMD [ARGS...]
//	redlock ls [-o table|json] [PATTERN]
//	redlock doctor
//	redlock inspect KEY
//	redlock unlock --force [--yes] KEY
//	redlock demo [--duration D]
//	redlock help [COMMAND]
//	redlock --version
//
// The nodes are given with --nodes host:port,host:port,... (or redis://
// URLs) or the REDLOCK_NODES environment variable. exec, ls and doctor need
// them: there is no in-memory fallback, since a lock held in one process
// excludes nobody else. demo runs on five embedded memory nodes unless
// --nodes is given; it does not read REDLOCK_NODES. A malformed address or
// an empty entry (a stray comma) is a usage error naming the address; a
// list of one node is refused unless --single-node is given (and then
// warned about), since a quorum of 1 does not survive that node's failure.
// A node that refuses the password is reported as "authentication failed".
//
// Passwords: a node with a password is a URL, redis://user:password@host:port.
// Put such a list in a file given with --nodes-file (one node per line,
// blank lines and # comments skipped; mode 0600: a file with a password
// that others may read gets a warning) or in REDLOCK_NODES (a
// systemd EnvironmentFile= readable by the service's user only, a
// Kubernetes Secret), not in --nodes: the command line of a process is
// visible to every user through ps. --nodes and --nodes-file exclude each
// other. redlock
// never prints a password: an address it reports shows "xxxxx" for the
// user and password, also when the address does not parse. exec removes
// REDLOCK_NODES from CMD's environment.
//
// # exec
//
// exec acquires KEY on a majority of the nodes, runs CMD with REDLOCK_KEY
// (the key), REDLOCK_FENCE (the fencing token: greater than that of every
// earlier holder of KEY) and REDLOCK_OWNER (the owner recorded with the
// lock) in its environment, keeps the lock alive while CMD runs, and
// releases it when CMD exits. Its conventions follow flock(1), etcdctl
// lock and consul lock:
//
//   - KEY comes before "--": "exec -- echo hi" is a usage error (exit 2),
//     not a lock named "echo".
//   - Without -n or -w it waits for the lock as long as it takes.
//   - -n, or -w 0 as in flock(1), gives up at once if another holder has the
//     lock; -w TIMEOUT gives up after TIMEOUT. Both exit 1, or the code given
//     with -E, without running CMD.
//   - Durations (-w, --ttl, --grace) are Go durations (500ms, 30s, 2m) or a
//     bare number of seconds, as flock(1) reads -w: "-w 5" is 5s.
//   - --ttl (default 10s) is the lock's time to live. The client's watchdog
//     extends the lock while CMD runs, once a third of the TTL (at least
//     500ms) or less remains; if a process dies without releasing, others
//     get the lock after at most the TTL.
//   - CMD and every process it starts are one unit that redlock ends as a
//     whole: if the lock is lost while CMD runs (the nodes forgot it, or
//     too many became unreachable for it to be extended), the unit gets
//     SIGTERM, then SIGKILL after --grace (default 5s), and redlock exits 4.
//   - When CMD exits, what it left running (a background child) is ended
//     the same way before the lock is released.
//   - If redlock itself dies, even by SIGKILL, nobody extends the lock: the
//     unit is ended the same way (SIGTERM, SIGKILL after --grace). Keep
//     --grace below --ttl, so that the unit is gone before the lock expires.
//   - The lock records its owner, shown by inspect and ls: --owner S, or by
//     default "host/PID/exec CMD" where PID is redlock's own process id
//     (CMD's is not known before the lock is taken): the process whose
//     death ends CMD's unit. An owner must be at most 256 bytes of UTF-8
//     without control characters; another is a usage error (exit 2) with
//     the library's message.
//   - --slots N runs CMD while holding one of N permits of the semaphore
//     KEY (package semaphore): at most N such commands run at once across
//     all hosts. CMD then runs under the permit's slot lock: REDLOCK_KEY is
//     the slot's key ("KEY}:slot:I") and REDLOCK_FENCE the slot's fence.
//     -n gives up when all N permits are held; N is 1 to 256, and KEY may
//     not contain '{' or '}'. Every command sharing KEY must give the same N.
//   - SIGINT, SIGTERM and SIGHUP sent to redlock are passed on to CMD: to
//     its process group, which it has of its own unless stdin is a terminal
//     (an interactive CMD stays in the terminal's foreground group, where
//     Ctrl-C reaches it directly).
//   - After SIGINT or SIGTERM, redlock ends: if CMD's unit is still running
//     --grace (default 5s) after the signal, it gets SIGKILL and redlock
//     exits 128+N (130 for SIGINT, 143 for SIGTERM); a CMD that ended
//     within --grace has its own status passed through. The lock is
//     released either way. SIGHUP is only passed on (a daemon may take it
//     as "reload").
//
// How: redlock runs CMD under a small supervisor, a second redlock process
// that is a child subreaper on Linux (PR_SET_CHILD_SUBREAPER): a process of
// the tree whose parent dies is reparented to the supervisor, so neither a
// double fork nor setsid leaves the unit. The supervisor ends the unit when
// redlock asks or when its pipe from redlock reaches end of file (redlock
// died). It signals CMD's process group and every descendant it finds in
// /proc, until it has no child left. Limits: a process that is not a
// descendant (one started through another service, e.g. systemd-run or a
// container runtime) is not part of the unit; if the supervisor itself is
// SIGKILLed, the unit is not ended (under systemd, the unit's cgroup is).
// On other systems (BSD, macOS) the unit is CMD's process group only.
//
// A typical cron line on every replica (the job runs once per 5-minute
// tick, however short it is; -n alone only keeps runs from overlapping):
//
//	redlock exec --once-per 5m cron:penalties -- ./calculate-penalties
//
// The tick of --once-per is the time rounded to the nearest multiple of
// the period, not the last one: with --once-per 1h a run at 01:43 claims
// the 02:00 tick, so a manual or test run uses up the next scheduled run
// (test under another KEY, or name the tick with --tick). A replica whose
// start is delayed past half a period would name the next tick: when the
// scheduler tells the time it fired, pass it with --scheduled-at TIME, and
// the tick is named by that time instead of now.
//
// # tick reset
//
// tick reset JOB TICK forgets a tick's records (after confirmation, or
// --yes), so that the next replica that asks runs it: to rerun a tick that
// failed, or one an at-most-once run left "claimed, not finished". It
// refuses while the tick runs. The records are force-released as unlock
// --force releases a lock.
//
// # ls
//
// ls lists the locks that a majority of the nodes holds whose key (without
// the "lock:" prefix) matches the glob PATTERN (default *), as the
// library's Client.Locks reports them: key, the holder's id (the same as
// inspect shows, never the token), its owner, its age (now minus the
// acquisition time recorded by the holder's clock, so clock skew between
// the hosts shows in it), the largest fence counter read (see inspect),
// the remaining TTL on each node, and
// the number of nodes that hold it. A node that cannot be read (down, EVAL
// refused) is marked "unreadable: <reason>" and its TTL column shows "?";
// when fewer than a majority of the nodes can be read, ls prints nothing
// and exits 3. Limit: a lock that fewer than a majority of the readable
// nodes hold is not listed, although unreadable nodes could make it a
// majority; whenever a node is unreadable ls says so in a warning on
// stderr. Keys and owners with control characters, spaces or quotes are
// quoted as Go strings. With -o json it prints one JSON object per lock,
// one per line: key, holder, owner, acquired_at (RFC 3339, null when not
// recorded), age_ms, fence, votes, quorum, majority (always true) and
// nodes (node, holder, ttl_ms, unreadable). The keys of ticks (exec
// --once-per and --tick, "tick:JOB@TICK" and its records) are left out
// unless --ticks is given (or PATTERN starts with "tick:"): they are then
// listed in a table of their own, one row per tick (job, tick, state,
// runner, fence, started, outcome), and in JSON with a "tick" field.
//
// # doctor
//
// doctor checks the nodes a deployment would use and prints one line per
// node and a verdict: reachable, Redis version, round-trip time (best of
// three PINGs), clock offset from this host (TIME, read at the middle of the
// round trip), maxmemory-policy (anything but noeviction is a warning), what
// a restart would forget (appendonly, appendfsync, save), whether a restart
// is safe given the clients' recovery period (--recovery-period, default the
// library's 10 minutes; 0 is off: then a node whose restart forgets locks is
// a warning), whether EVAL (a harmless script) and PUBLISH (to a throwaway
// channel) are allowed, and whether two names reach one server (run_id).
// A node that is unreachable, refuses EVAL or repeats another is not usable.
// It also says how many more node failures the quorum survives. With some
// nodes unusable but a quorum left, the verdict is DEGRADED (exit 5): locks
// can be taken, but fewer failures stop them (none, with 1 of 3 nodes down).
//
// # inspect and unlock
//
// inspect shows who holds KEY as a majority of the nodes says: owner
// (host/pid/program by default), acquisition time, the largest fence
// counter read (at least the holder's fence once its acquisition returned,
// larger when the nodes' counters drifted apart, not the holder's fence),
// the time a majority keeps it, whether the nodes agree, and each node's
// view.
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
// statuses. It needs no Redis server. With --nodes it runs on those Redis
// nodes instead (REDLOCK_NODES is not read), with every key under a prefix
// of its own, "demo:RUN:", and removes those keys when it ends.
//
// # Exit codes
//
//	0    success (exec: CMD exited 0; doctor: every check passed)
//	1    exec: the lock is held elsewhere (-n, -w 0) or -w timed out (see -E);
//	     doctor: a lock can be taken but a warning weakens it;
//	     demo: a safety check failed;
//	     unlock: not held, held by another holder, or not confirmed
//	2    usage error: bad flag, missing KEY or CMD, bad --nodes
//	3    too few nodes reachable (ls: readable) for a quorum;
//	     doctor: fewer usable distinct servers than a quorum, or one server
//	     listed under two names
//	4    exec: the lock was lost while CMD ran; CMD was terminated
//	5    doctor: degraded: a quorum is usable, but some nodes are not
//	126  exec: CMD found but not executable (a directory, no permission,
//	     an exec format error)
//	127  exec: CMD not found
//	128+N  CMD died by signal N, or redlock got SIGINT/SIGTERM (N) while
//	     waiting, or while CMD ran and CMD outlived --grace
//	other  exec: the exit status of CMD, passed through
//
// CMD's own exit status is passed through unchanged, so a CMD that can exit
// 1 to 4 by itself is ambiguous with redlock's codes: use -E to move the
// conflict code, and read redlock's one-line message on stderr.
package main

const usageMain = `redlock: run commands under a distributed lock on a quorum of Redis nodes

Usage:
  redlock exec [-n] [-w TIMEOUT] [-E CODE] [--ttl D] [--grace D] [--owner S] KEY -- CMD [ARGS...]
  redlock ls [-o table|json] [--ticks] [PATTERN]
  redlock doctor
  redlock inspect KEY
  redlock unlock --force [--yes] KEY
  redlock elect [--value S] [--ttl D] [--grace D] NAME -- CMD [ARGS...]
  redlock leader NAME
  redlock tick reset [--yes] JOB TICK
  redlock demo [--duration D]
  redlock help [COMMAND]
  redlock --version

Nodes: --nodes host:port,host:port,... or REDLOCK_NODES (required for exec, ls,
doctor, inspect, unlock, elect and leader; demo runs on 5 embedded memory nodes
unless --nodes is given). Put passwords (redis://user:password@host:port) in
a --nodes-file FILE of mode 0600 or REDLOCK_NODES, not in --nodes, which ps
shows; redlock never prints them. A malformed address or an empty entry (a
stray comma) is a usage error; one node is refused unless --single-node is
given, since a quorum of 1 does not survive that node's failure.

Exit codes:
  0      success (exec: CMD exited 0; doctor: all checks passed)
  1      exec: lock held elsewhere (-n, -w 0) or wait timed out (-w); override with -E
         doctor: warnings; demo: a safety check failed; unlock: not held or not confirmed
         leader: no leader
  2      usage error (also: a malformed node address, one node without --single-node)
  3      too few nodes reachable (ls: readable) for a quorum, e.g. down or
         refusing the password ("authentication failed"); doctor: not trusted
  4      exec: lock lost while CMD ran (CMD got SIGTERM, then SIGKILL after --grace)
         elect: leadership lost while CMD ran (the same)
  5      doctor: degraded (a quorum is usable, but some nodes are not)
  126    exec: CMD found but not executable (directory, permission, format)
  127    exec: CMD not found
  128+N  CMD died by signal N, or redlock got SIGINT/SIGTERM (N) and CMD
         outlived --grace
  other  exec: CMD's own exit status, passed through
`

const usageExec = `Usage: redlock exec [flags] KEY -- CMD [ARGS...]

Acquire KEY on a majority of the nodes, run CMD while holding it, release it.
CMD gets REDLOCK_KEY, REDLOCK_FENCE (a fencing token greater than that of
every earlier holder) and REDLOCK_OWNER in its environment. The lock is
extended while a third of the TTL remains.

The lock records an owner, shown by inspect and ls: --owner, or by default
"host/PID/exec CMD" with redlock's own PID (CMD's is not known before the
lock is taken): the process whose death ends CMD's unit.

CMD and everything it starts are one unit: if the lock is lost, the unit
gets SIGTERM, then SIGKILL after --grace, and redlock exits 4. If redlock
itself dies (even by SIGKILL), the unit is ended the same way; what CMD
leaves running when it exits is ended the same way before the lock is
released. SIGINT, SIGTERM and SIGHUP are passed on to CMD (to its own
process group unless stdin is a terminal). After SIGINT or SIGTERM the unit
gets SIGKILL if still running --grace later, and redlock exits 128+N (CMD's
own status if it ended in time); the lock is released. CMD does not inherit
REDLOCK_NODES.

Without -n or -w, exec waits for the lock as long as it takes (forever).

Flags:
  -n             fail at once if the lock is held elsewhere (exit 1, or -E)
  -w TIMEOUT     give up after waiting TIMEOUT (exit 1, or -E); -w 0 is -n;
                 default: wait forever
  -E CODE        exit code for -n conflicts and -w timeouts (default 1)
  --ttl D        lock time to live (default 10s)
  --grace D      time between SIGTERM (or a SIGINT/SIGTERM passed on) and
                 SIGKILL (default 5s; keep it below --ttl)
  --owner S      owner recorded with the lock (default host/PID/exec CMD; at
                 most 256 bytes of UTF-8, no control characters)
  --shared       take KEY's read-write lock as a reader: many --shared
                 runs of KEY at once, none while an --exclusive one runs
  --exclusive    take KEY's read-write lock as the writer (a waiting
                 writer keeps new readers out); REDLOCK_FENCE of a reader
                 is at least that of the writers before it
  --prefix P     key prefix on the nodes (default "lock:")
  --nodes LIST   host:port,host:port,... (default $REDLOCK_NODES; required)
  --nodes-file F the node list from file F (one node per line, # comments):
                 keeps passwords off the command line, which ps shows;
                 a file that others may read gets a warning
  --single-node  allow a list of one node (quorum 1: it must never fail);
                 without it, one node is a usage error
  --slots N      hold one of N permits of the semaphore KEY (1 to 256): at
                 most N commands run at once; REDLOCK_KEY is then the
                 permit's slot key (KEY}:slot:I), REDLOCK_FENCE its fence
  --once-per D   run CMD once per tick on all replicas: KEY is the job, the
                 tick is now rounded to the nearest multiple of D (UTC). A
                 replica that finds the tick ran or running exits 1 (or -E)
                 with a line saying which tick, who ran it, when. Nearest,
                 not last: with --once-per 1h a run at 01:43 claims the
                 02:00 tick, so a manual or test run uses up the next
                 scheduled run (test under another KEY, or use --tick)
  --scheduled-at TIME  with --once-per: name the tick by TIME, when the
                 scheduler fired (RFC 3339 or Unix seconds), instead of now:
                 a replica started late still names its own tick. See
                 docs/cli.md for where schedulers tell the time
  --tick VALUE   as --once-per, with the tick named by the caller, e.g.
                 $(date -u +%Y-%m-%dT%H:%M) in a crontab
  --at-least-once  rerun a tick whose runner died before it finished
                 (default: at most once; the tick is "claimed, not finished")
  --retention D  how long a tick's record turns replicas away (default
                 twice --once-per, or 24h with --tick)
  --min-hold D   a plain lock stays at least D after it was taken, even
                 when CMD exits sooner (lockAtLeastFor)
  --recovery-period D  how long a node that lost its data (restarted
                 empty, flushed) sits out (default 10m; 0: off), or the
                 longest --min-hold or tick --retention, if longer. Use
                 the same on every client of the nodes. --ttl may not
                 exceed it (exit 2): a node that counts again no longer
                 has the key

Without --shared or --exclusive, exec takes KEY's mutex, which is a lock
apart from KEY's read-write lock: a plain exec and a --shared or
--exclusive exec of one KEY do not exclude each other. The read-write lock
is not listed by ls or inspect.

Durations: 500ms, 30s, 2m, or a bare number of seconds (-w 5 is 5s, as in flock).

Exit codes: CMD's own; 1 conflict or timeout (-E); 2 usage; 3 nodes
unreachable; 4 lock lost; 126 found but not executable; 127 not found;
128+N signal N (CMD's, or SIGINT/SIGTERM to redlock).
`

const usageLs = `Usage: redlock ls [flags] [PATTERN]

List the locks held on a majority of the nodes whose key (without the
prefix) matches the glob PATTERN (default *): key, holder id (as inspect
shows it), OWNER, AGE (now minus the acquisition time by the holder's
clock: skew between the hosts shows in it), FENCE (the largest counter
read, as inspect shows it), remaining TTL on each node ("?": node
unreadable), and how many nodes hold it. A lock held on fewer than a
majority of the readable nodes is not listed, even when unreadable nodes
could make it a majority: a warning on stderr says when nodes are
unreadable. Keys and owners with control characters, spaces or
quotes are printed quoted.

Flags:
  -o FORMAT      table (default) or json: one JSON object per lock and line
                 (key, holder, owner, acquired_at, age_ms, fence, votes,
                 quorum, majority, nodes; tick for a tick's key)
  --ticks        also list the ticks of exec --once-per and --tick, in a
                 table of their own (job, tick, state, runner, fence,
                 started, outcome); without it their keys are left out,
                 unless PATTERN starts with "tick:"
  --prefix P     key prefix on the nodes (default "lock:")
  --nodes LIST   host:port,host:port,... (default $REDLOCK_NODES; required)
  --nodes-file F the node list from file F (one node per line, # comments):
                 keeps passwords off the command line, which ps shows;
                 a file that others may read gets a warning
  --single-node  allow a list of one node (quorum 1: it must never fail);
                 without it, one node is a usage error

Exit codes: 0 listed; 2 usage (a bad PATTERN: an unclosed '[', a trailing
'\'); 3 fewer than a majority of the nodes readable.
`

const usageDoctor = `Usage: redlock doctor [flags]

Check the nodes a deployment would use: one line per node, then a verdict.
Per node: reachable, Redis version, round-trip time, clock offset from this
host (TIME), maxmemory-policy (anything but noeviction is a warning), what a
restart would forget (appendonly/appendfsync/save; "unknown" when CONFIG is
refused), EVAL and PUBLISH allowed (ACL, rename-command), and distinct servers
(run_id: two names of one server fail). Then how many more node failures the
quorum survives, and whether a restart is safe: yes when every node runs
appendfsync always, or when the clients sit a node that lost its data out for
a recovery period (on by default); with recovery off, each node whose restart
forgets locks is a warning.

Flags:
  --nodes LIST   host:port,host:port,... (default $REDLOCK_NODES; required)
  --nodes-file F the node list from file F (one node per line, # comments):
                 keeps passwords off the command line, which ps shows;
                 a file that others may read gets a warning
  --single-node  allow a list of one node (quorum 1: it must never fail);
                 without it, one node is a usage error
  --recovery-period D
                 the recovery period the clients of these nodes use
                 (default 10m, the library's default; 0: recovery off)

Exit codes: 0 a lock can be trusted; 1 warnings (a lock can be taken, but a
setting weakens it); 2 usage; 3 not trusted (fewer usable distinct servers
than a quorum, or one server under two names); 5 degraded (a quorum is
usable, but some nodes are not: fewer node failures are survived).
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
                 (REDLOCK_NODES is not read; a real node is not stopped
                 midway; keys go under demo:RUN: and are removed at the end)
  --nodes-file F the same list from file F (one node per line, # comments)
  --single-node  allow a list of one node
  --metrics-addr ADDR  serve Prometheus metrics at http://ADDR/metrics while
                 running (e.g. :9464); the names of the promlock module

Exit codes: 0 run passed its safety checks; 1 a check failed (an overlap, or an
accepted stale write); 2 usage; 3 nodes unreachable.
`
