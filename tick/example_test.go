package tick_test

import (
	"context"
	"fmt"
	"time"

	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/tick"
)

// Three replicas fire the same hourly tick, one after the other: the first
// runs it, the others are turned away by its record.
func ExampleRun() {
	client, _ := redlock.NewLocal(redlock.WithOwner("replica"))
	defer client.Close()
	ctx := context.Background()
	at := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	clock := tick.WithClock(func() time.Time { return at.Add(10 * time.Second) }) // a little late
	for range 3 {
		res, err := tick.Run(ctx, client, "billing-report", tick.Every(time.Hour), func(ctx context.Context) error {
			fmt.Println("sending the report")
			return nil
		}, clock)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s ran=%v: %s\n", res.Tick, res.Ran, res.Status)
	}
	// Output:
	// sending the report
	// 2026-01-02T03:00:00Z ran=true: ran
	// 2026-01-02T03:00:00Z ran=false: already ran
	// 2026-01-02T03:00:00Z ran=false: already ran
}
