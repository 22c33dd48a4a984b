// Package lockmetrics is the one definition of quorumlock's metrics: their
// names, units, labels and buckets, and how redlock events update them. The
// Prometheus and OpenTelemetry adapters (modules promlock and otellock) and
// the demo's dependency-free /metrics (Text) are sinks of the same Recorder,
// so the three expose the same names.
package lockmetrics

// Kind is how a metric aggregates.
type Kind int

const (
	Counter   Kind = iota // only goes up
	Gauge                 // goes up and down (Add with ±1)
	Histogram             // Observe
)

// Metric describes one metric family.
type Metric struct {
	ID      int // index in All
	Name    string
	Help    string
	Kind    Kind
	Unit    string // UCUM unit for OpenTelemetry: "s", "{attempt}", ...
	Labels  []string
	Buckets []float64 // Histogram only
}

var secondBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

// The metrics. A class is the key's class (see Classes); result and reason
// values are redlock's Event.Reason words.
var (
	Acquisitions = &Metric{Name: "quorumlock_acquisitions_total", Kind: Counter, Unit: "{acquisition}",
		Help:   "Acquisition calls (Acquire, TryAcquire, Do, TryDo) by class and result: acquired, contended, split_vote, quorum_unreachable, canceled, expired, invalid, recovering.",
		Labels: []string{"class", "result"}}
	AcquireSeconds = &Metric{Name: "quorumlock_acquire_duration_seconds", Kind: Histogram, Unit: "s",
		Help:   "Time from the start of an acquisition call to its result (the wait, retries included), by class and result.",
		Labels: []string{"class", "result"}, Buckets: secondBuckets}
	AcquireAttempts = &Metric{Name: "quorumlock_acquire_attempts", Kind: Histogram, Unit: "{attempt}",
		Help:   "Attempts per acquisition call, by class.",
		Labels: []string{"class"}, Buckets: []float64{1, 2, 3, 5, 8, 13, 21, 34, 55}}
	Takeovers = &Metric{Name: "quorumlock_takeovers_total", Kind: Counter, Unit: "{acquisition}",
		Help:   "Acquisitions that took over from a holder that never released the lock (it expired or was force-released: a crashed or stuck holder), by class.",
		Labels: []string{"class"}}
	Contended = &Metric{Name: "quorumlock_contended_attempts_total", Kind: Counter, Unit: "{attempt}",
		Help:   "Attempts that lost, by class and reason: contended (another client holds a majority), split_vote (no client does) or recovering (nodes that lost their data for the key sat out).",
		Labels: []string{"class", "reason"}}
	Waiters = &Metric{Name: "quorumlock_waiters", Kind: Gauge, Unit: "{call}",
		Help:   "Acquisition calls in progress: started their first attempt, not yet acquired or given up, by class.",
		Labels: []string{"class"}}
	Held = &Metric{Name: "quorumlock_held_locks", Kind: Gauge, Unit: "{lock}",
		Help:   "Locks acquired and not yet released or lost, by class.",
		Labels: []string{"class"}}
	Kept = &Metric{Name: "quorumlock_kept_locks", Kind: Gauge, Unit: "{lock}",
		Help:   "Locks under auto-extension (KeepAlive, Do, TryDo, Hold), by class.",
		Labels: []string{"class"}}
	Extensions = &Metric{Name: "quorumlock_extensions_total", Kind: Counter, Unit: "{extension}",
		Help:   "Extension rounds by class and result: ok, or quorum_unreachable (failed, the lock still valid; an extension that finds the lock lost counts as a loss).",
		Labels: []string{"class", "result"}}
	Losses = &Metric{Name: "quorumlock_losses_total", Kind: Counter, Unit: "{lock}",
		Help:   "Locks that ended without a release, by class and reason: expired, not_ours, unconfirmed, extension_failed, max_hold.",
		Labels: []string{"class", "reason"}}
	Releases = &Metric{Name: "quorumlock_releases_total", Kind: Counter, Unit: "{lock}",
		Help:   "Locks released on a majority, by class.",
		Labels: []string{"class"}}
	FencedRejections = &Metric{Name: "quorumlock_fenced_rejections_total", Kind: Counter, Unit: "{write}",
		Help:   "Writes refused by a fenced store for a stale fence, as reported to the adapter, by class.",
		Labels: []string{"class"}}
	NodeErrors = &Metric{Name: "quorumlock_node_errors_total", Kind: Counter, Unit: "{request}",
		Help:   "Requests to one node that failed (error, timeout), by node and operation.",
		Labels: []string{"node", "op"}}
	NodeRecovering = &Metric{Name: "quorumlock_node_recovering_total", Kind: Counter, Unit: "{request}",
		Help:   "Acquire answers of one node that did not count because it lost its data for the key and sits out of it for the recovery period, by node (until when: redlock inspect KEY).",
		Labels: []string{"node"}}
	UndoFailures = &Metric{Name: "quorumlock_undo_failures_total", Kind: Counter, Unit: "{request}",
		Help:   "Undos of a failed acquisition attempt that did not reach a node, by node: the attempt's key stays there until its TTL ends.",
		Labels: []string{"node"}}
	NodeSeconds = &Metric{Name: "quorumlock_node_request_duration_seconds", Kind: Histogram, Unit: "s",
		Help:   "Time one node took to answer one request of a quorum round, failures included, by node and operation.",
		Labels: []string{"node", "op"}, Buckets: secondBuckets}
)

// All is every metric, in exposition order.
var All = []*Metric{Acquisitions, AcquireSeconds, AcquireAttempts, Takeovers, Contended, Waiters, Held, Kept,
	Extensions, Losses, Releases, FencedRejections, NodeErrors, NodeRecovering, NodeSeconds, UndoFailures}

func init() {
	for i, m := range All {
		m.ID = i
	}
}
