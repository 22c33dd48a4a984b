package statuslock

import "slices"

// Status is the lifecycle state of a service.
//
// The usual transitions, documented here but not enforced (the
// reconciliation loop may correct any status to any other):
//
//	IDLE      -> DEPLOYING                     first deployment
//	DEPLOYING -> RUNNING | FAILED              the worker finished (RUNNING also after a rollback)
//	RUNNING   -> DEPLOYING | STOPPED | CRASHING
//	STOPPED   -> DEPLOYING | RUNNING
//	CRASHING  -> RUNNING | STOPPED | FAILED | DEPLOYING
//	FAILED    -> DEPLOYING
type Status string

// The statuses of a service.
const (
	// StatusIdle: the service exists but was never deployed.
	StatusIdle Status = "IDLE"
	// StatusDeploying: a deployment is queued or building.
	StatusDeploying Status = "DEPLOYING"
	// StatusRunning: the service's container runs.
	StatusRunning Status = "RUNNING"
	// StatusStopped: the container exists but does not run.
	StatusStopped Status = "STOPPED"
	// StatusFailed: the latest deployment failed and no container runs.
	StatusFailed Status = "FAILED"
	// StatusCrashing: the container keeps restarting.
	StatusCrashing Status = "CRASHING"
)

// Statuses lists every valid status.
func Statuses() []Status {
	return []Status{StatusIdle, StatusDeploying, StatusRunning, StatusStopped, StatusFailed, StatusCrashing}
}

var transitions = map[Status][]Status{
	StatusIdle:      {StatusDeploying},
	StatusDeploying: {StatusRunning, StatusFailed},
	StatusRunning:   {StatusDeploying, StatusStopped, StatusCrashing},
	StatusStopped:   {StatusDeploying, StatusRunning},
	StatusCrashing:  {StatusRunning, StatusStopped, StatusFailed, StatusDeploying},
	StatusFailed:    {StatusDeploying},
}

// Valid reports whether s is one of the defined statuses.
func (s Status) Valid() bool {
	_, ok := transitions[s]
	return ok
}

// String implements fmt.Stringer.
func (s Status) String() string { return string(s) }

// CanTransitionTo reports whether s -> next is one of the usual transitions
// listed on Status. Nothing in this package enforces it; a Store accepts any
// valid status, since reconciliation corrects drift in any direction.
// Writing the same status again is always allowed.
func (s Status) CanTransitionTo(next Status) bool {
	if !s.Valid() || !next.Valid() {
		return false
	}
	return s == next || slices.Contains(transitions[s], next)
}
