package election_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/quorumlock/quorumlock/election"
	"github.com/quorumlock/quorumlock/redlock"
)

// Two replicas campaign; the first leads, the other sees it, and takes over
// when the first resigns. Each leader sends its term's fence with its
// writes. (NewLocal runs on one in-process node; pass your Redis nodes to
// redlock.New in production.)
func Example() {
	client, err := redlock.NewLocal()
	if err != nil {
		panic(err)
	}
	defer client.Close()
	ctx := context.Background()
	e, err := election.New(client, "scheduler")
	if err != nil {
		panic(err)
	}

	term, err := e.Campaign(ctx, "replica-1")
	if err != nil {
		panic(err)
	}
	leader, _ := e.Leader(ctx)
	fmt.Println("leader:", leader.Value)

	next := make(chan *election.Term)
	go func() {
		t, err := e.Campaign(ctx, "replica-2") // blocks while replica-1 leads
		if err != nil {
			panic(err)
		}
		next <- t
	}()

	if err := term.Resign(ctx); err != nil {
		panic(err)
	}
	term2 := <-next
	leader, _ = e.Leader(ctx)
	fmt.Println("leader:", leader.Value, "fence larger:", term2.Fence() > term.Fence())

	_ = term2.Resign(ctx)
	_, err = e.Leader(ctx)
	fmt.Println("no leader:", errors.Is(err, election.ErrNoLeader))
	// Output:
	// leader: replica-1
	// leader: replica-2 fence larger: true
	// no leader: true
}
