package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// progress prints a live status line: redrawn in place with a carriage
// return on a terminal, as plain lines once a second otherwise. Events
// (a node stopped, a holder paused) get lines of their own.
type progress struct {
	w        io.Writer
	tty      bool
	stats    *demoStats
	world    *world
	duration time.Duration

	mu       sync.Mutex
	drawn    bool // a live line is on screen (tty)
	lastDraw time.Time
}

func newProgress(w io.Writer, st *demoStats, wd *world, d time.Duration) *progress {
	return &progress{w: w, tty: isTerminal(w), stats: st, world: wd, duration: d}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	return isTTY(int(f.Fd()))
}

// run draws the line until ctx ends.
func (p *progress) run(ctx context.Context) {
	every := time.Second
	if p.tty {
		every = 100 * time.Millisecond
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			p.draw()
		}
	}
}

func (p *progress) line() string {
	t := p.stats.totals()
	elapsed := time.Since(p.world.start).Truncate(100 * time.Millisecond)
	var st []string
	for _, svc := range p.world.services {
		st = append(st, svc+"="+string(p.world.status(context.Background(), svc).Status))
	}
	return fmt.Sprintf("[%4.1fs/%s] acquired %d  extended %d  writes %d  fenced %d  overlaps %d  nodes down %d | %s",
		elapsed.Seconds(), p.duration, t.acquired, t.extended, t.writes, t.fenced, t.overlaps, t.down, strings.Join(st, " "))
}

func (p *progress) draw() {
	l := p.line()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lastDraw = time.Now()
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s", l)
		p.drawn = true
		return
	}
	fmt.Fprintln(p.w, l)
}

// event prints one line about something that happened, above the live line.
func (p *progress) event(msg string) {
	elapsed := time.Since(p.world.start)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
		p.drawn = false
	}
	fmt.Fprintf(p.w, "[%4.1fs] %s\n", elapsed.Seconds(), msg)
}

// finish draws the last state and ends the live line.
func (p *progress) finish() {
	p.mu.Lock()
	stale := time.Since(p.lastDraw) > 300*time.Millisecond
	p.mu.Unlock()
	if p.tty || stale {
		p.draw()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty {
		fmt.Fprintln(p.w)
		p.drawn = false
	}
}
