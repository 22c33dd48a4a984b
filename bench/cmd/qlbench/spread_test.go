package main

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/bench/internal/harness"
	"github.com/quorumlock/quorumlock/internal/redistest"
)

// TestDelayDialerDelaysEachWrite: every Write through the dialer's
// connection takes at least the delay, and the bytes arrive intact; no
// delay gives the plain connection.
func TestDelayDialerDelaysEachWrite(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	got := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer func() { _ = c.Close() }()
		b, _ := io.ReadAll(c)
		got <- b
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second) // hang guard
	defer cancel()

	const delay = 20 * time.Millisecond
	c, err := delayDialer(delay)(ctx, "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.(*delayConn); !ok {
		t.Fatalf("dialled %T, want a *delayConn", c)
	}
	for _, w := range []string{"PING\r\n", "SET k v\r\n", "GET k\r\n"} {
		t0 := time.Now()
		if _, err := c.Write([]byte(w)); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(t0); took < delay {
			t.Errorf("Write %q took %s, want at least %s", w, took, delay)
		}
	}
	_ = c.Close()
	select {
	case b := <-got:
		if string(b) != "PING\r\nSET k v\r\nGET k\r\n" {
			t.Errorf("server read %q", b)
		}
	case <-ctx.Done():
		t.Fatal("server read nothing")
	}

	plain, err := delayDialer(0)(ctx, "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = plain.Close() }()
	if _, ok := plain.(*delayConn); ok {
		t.Error("no delay: dialled a *delayConn, want the plain connection")
	}
}

// TestSpreadLockersAreDelayed: both libraries' clients go through the
// delaying dialer, each node with its own delay: a PING of a node takes at
// least its delay, and a cycle (an acquire round, then a release round,
// each deciding at 2 of 3 nodes at the earliest) at least twice the
// second-smallest delay.
func TestSpreadLockersAreDelayed(t *testing.T) {
	cl := redistest.StartT(t, 3)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // hang guard
	defer cancel()
	delays := msDurations(5, 10, 40)

	cs := newDelayedClientSet(cl.Addrs(), delays)
	defer cs.Close()
	for i, c := range cs.clients {
		if err := c.Ping(ctx).Err(); err != nil { // dials: the handshake is delayed too
			t.Fatal(err)
		}
		t0 := time.Now()
		if err := c.Ping(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(t0); took < delays[i] {
			t.Errorf("node %d: PING took %s, want at least %s", i, took, delays[i])
		}
	}

	ls, closeAll, err := spreadLockers(func(string) bool { return true }, cl.Addrs(), delays)
	if err != nil {
		t.Fatal(err)
	}
	defer closeAll()
	if len(ls) != 2 || ls[0].name != libQL || ls[1].name != libRS {
		t.Fatalf("lockers %v, want quorumlock and redsync", ls)
	}
	for _, l := range ls {
		for i, key := range []string{"spread-test:a", "spread-test:b"} {
			t0 := time.Now()
			if err := l.cycle(ctx, key); err != nil {
				t.Fatalf("%s cycle %d: %v", l.name, i, err)
			}
			if took, least := time.Since(t0), 2*delays[1]; took < least {
				t.Errorf("%s cycle %d took %s, want at least %s", l.name, i, took, least)
			}
		}
	}
}

// TestCountBatch: exactly n calls, each timed, failures counted by message;
// an ended context stops the batch.
func TestCountBatch(t *testing.T) {
	lat := harness.NewLatencies(16)
	var seen []int
	ops, errs, sample, _ := countBatch(t.Context(), 7, lat, func(i int) error {
		seen = append(seen, i)
		if i%3 == 0 {
			return errors.New("boom")
		}
		return nil
	})
	if ops != 7 || errs != 3 || sample["boom"] != 3 || lat.Len() != 7 || len(seen) != 7 || seen[6] != 6 {
		t.Errorf("ops %d errs %d sample %v latencies %d calls %v; want 7, 3, boom×3, 7, 0..6", ops, errs, sample, lat.Len(), seen)
	}

	ctx, cancel := context.WithCancel(t.Context())
	ops, _, _, _ = countBatch(ctx, 100, lat, func(i int) error {
		if i == 4 {
			cancel()
		}
		return nil
	})
	if ops != 5 || lat.Len() != 5 {
		t.Errorf("cancelled after call 4: %d calls, %d latencies; want 5", ops, lat.Len())
	}
}

// TestSpreadRatios: the four ratios against redsync, with the target.
func TestSpreadRatios(t *testing.T) {
	rp := &harness.Report{}
	for _, v := range spreadVariants {
		rp.Add("Spread", v.cas, libQL, harness.Rep{N: 1, Metrics: []harness.Metric{{Unit: "p50-ns", Value: 1e6}, {Unit: "p99-ns", Value: 4e6}}})
		rp.Add("Spread", v.cas, libRS, harness.Rep{N: 1, Metrics: []harness.Metric{{Unit: "p50-ns", Value: 2e6}, {Unit: "p99-ns", Value: 5e6}}})
	}
	want := map[string]float64{
		"spread cycle p50 vs redsync": 0.5, "spread cycle p99 vs redsync": 0.8,
		"one far node cycle p50 vs redsync": 0.5, "one far node cycle p99 vs redsync": 0.8,
	}
	n := 0
	for _, r := range ratios(rp) {
		w, ok := want[r.Name]
		if !ok {
			continue
		}
		n++
		if r.Value != w || r.Target != "<= 0.6" || r.Met == nil || *r.Met != (w <= 0.6) {
			t.Errorf("%s: %+v; want value %g, target <= 0.6", r.Name, r, w)
		}
	}
	if n != len(want) {
		t.Errorf("%d of the %d spread ratios", n, len(want))
	}
}
