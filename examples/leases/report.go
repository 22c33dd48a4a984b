package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/quorumlock/quorumlock/sqlfence"
)

// ok: every task completed exactly once, the killed task by another worker,
// and both late writes refused.
func (r *report) ok(cfg config) bool {
	return r.Completed == cfg.Tasks && r.DistinctTasks == cfg.Tasks && r.Duplicates == 0 &&
		r.RecoveredBy != "" && r.RecoveredBy != "worker-1" && r.RecoveredFrom == "worker-1" &&
		r.LateVersion != nil && errors.Is(r.LateFence, sqlfence.ErrStaleFence) && r.LateRowsWhere == "done" &&
		len(r.Errors) == 0
}

func (r *report) summary(cfg config, took time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d completions of %d tasks (%d distinct, %d completed twice) in %v; by worker %v\n",
		r.Completed, cfg.Tasks, r.DistinctTasks, r.Duplicates, took.Round(time.Millisecond), r.ByWorker)
	fmt.Fprintf(&b, "leases: worker-1 killed holding task %d; recovered by %s from %s (TookOver: %q), %d recoveries in all\n",
		r.Killed, r.RecoveredBy, r.RecoveredFrom, r.TookOverOwner, r.Recoveries)
	fmt.Fprintf(&b, "leases: worker-1's late completion: %v\n", r.LateVersion)
	fmt.Fprintf(&b, "leases: worker-1's late fenced write: %v\n", r.LateFence)
	fmt.Fprintf(&b, "leases: task %d is %s; errors %d; lock attempts retried after quorum unreachable %d", r.Killed, r.LateRowsWhere, len(r.Errors), r.Retried)
	return b.String()
}
