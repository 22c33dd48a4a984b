// Package tick makes a scheduled job run on exactly one replica per tick,
// however short the job is, and whenever the other replicas fire.
//
// A plain lock cannot do this: it only keeps runs from overlapping. A job
// that takes a microsecond finishes and releases before a replica that
// fires a little later asks, and that replica runs the same tick again.
// What turns it away must outlive the run: a record of the tick.
//
//	res, err := tick.Run(ctx, client, "billing-report", tick.Every(time.Hour),
//		func(ctx context.Context) error { return sendReport(ctx) })
//	if err == nil && !res.Ran {
//		log.Print(res) // job billing-report tick 2026-...: already ran; by pod-2, ...
//	}
//
// The tick is named by the replica's clock rounded to the nearest
// multiple of the period (Every: UTC, from the Unix epoch), so replicas
// up to half a period apart name the same tick; or given by the caller
// (At, a scheduled time; Named, a label such as a crontab's minute).
// Nearest, not last: with Every(time.Hour) a run at 01:43 claims the
// 02:00 tick, so a manual or test run uses up the next scheduled run, and
// a replica whose start is delayed past half a period runs the next tick
// early. Test under another job name; where the scheduler tells the time
// it fired, name the tick by it (WithClock, or At of that time rounded).
//
// How it works, on an ordinary redlock.Client (any nodes: Redis, memory,
// redlock.NewLocal), with no other protocol:
//   - Claim: a lock on "tick:<job>@<tick>" taken with TryAcquire, which
//     resolves split votes between replicas that fire at the same instant,
//     gives the run its fence, and is kept alive while the job runs (the
//     job's context is cancelled if the claim is lost, as in Client.Do).
//   - Records: under the claim, the runner writes "claimed" before the job
//     and "done" (runner, fence, start, outcome) after it, each as a key
//     acquired on a majority and left to expire after the retention
//     (redlock.Lock.HoldAtLeast). A record is present when any node of an
//     answering majority has it: majorities intersect. So nothing grows:
//     every key of a tick expires by itself.
//   - A replica that cannot claim reads the records and the claim: "done"
//     means already ran, a held claim means running elsewhere. A replica
//     that claims reads the records first and runs only if no run is
//     recorded. Only a claim holder decides that a runner is gone.
//
// Modes: AtMostOnce (the default: a tick is never run twice, and a runner
// that crashed leaves it "claimed, not finished") and AtLeastOnce (a tick
// whose claim ended without "done" runs again, with a larger fence, on the
// next replica that asks). The default is the one a lock user expects of a
// report, a mail or a charge; choose AtLeastOnce for idempotent or fenced
// work that must not be skipped.
//
// Limits: a replica that asks after the records expired (WithRetention;
// twice the period by default) runs the tick again; keep replicas' clocks
// and start delays within half a period and the retention. The fence is
// per tick: compare fences of one tick, not across ticks. The tick's
// claim is a lock like any other, with the client's guarantees and limits.
// A retention longer than the client's recovery period is told to the
// nodes: a node that lost its data sits out that long, so a rolling
// restart loses no record (and a daily tick sits such a node out a day).
package tick
