// Command dashpng renders the panels of promlock's Grafana dashboard
// (promlock/dashboards/quorumlock.json) as a PNG from a real run of
// `redlock demo --metrics-addr`, for the README, where no Grafana runs: it
// builds the demo, scrapes its /metrics every -every while it runs, and
// computes each panel's queries (rates and histogram quantiles over -window)
// from the scraped samples, as Prometheus would.
//
//	cd bench && go run ./cmd/dashpng -out ../promlock/dashboards/demo.png
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

func main() {
	root := flag.String("root", "..", "the repository root (holding cmd/redlock)")
	out := flag.String("out", "../promlock/dashboards/demo.png", "PNG to write")
	duration := flag.Duration("duration", 30*time.Second, "demo --duration")
	every := flag.Duration("every", 500*time.Millisecond, "scrape interval")
	window := flag.Duration("window", 2*time.Second, "rate and quantile window ($__rate_interval)")
	flag.Parse()
	if err := run(*root, *out, *duration, *every, *window); err != nil {
		fmt.Fprintln(os.Stderr, "dashpng:", err)
		os.Exit(1)
	}
}

func run(root, out string, duration, every, window time.Duration) error {
	tmp, err := os.MkdirTemp("", "dashpng")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "redlock")
	build := exec.Command("go", "build", "-o", bin, "./cmd/redlock")
	build.Dir, build.Stdout, build.Stderr = root, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("build the demo: %w", err)
	}
	args := []string{"demo", "--duration", duration.String(), "--metrics-addr", "127.0.0.1:0"}
	demo := exec.Command(bin, args...)
	demo.Env = append(os.Environ(), "REDLOCK_NODES=")
	stdout, err := demo.StdoutPipe()
	if err != nil {
		return err
	}
	demo.Stderr = os.Stderr
	if err := demo.Start(); err != nil {
		return err
	}
	lines := bufio.NewScanner(stdout)
	url := ""
	for lines.Scan() {
		fmt.Println(lines.Text())
		if u, ok := strings.CutPrefix(lines.Text(), "metrics: "); ok {
			url = u
			break
		}
	}
	if url == "" {
		return fmt.Errorf("the demo printed no metrics address")
	}
	printed := make(chan struct{})
	go func() { // the rest of the demo's output, for the record
		defer close(printed)
		for lines.Scan() {
			fmt.Println(lines.Text())
		}
	}()
	exited := make(chan error, 1)
	go func() { <-printed; exited <- demo.Wait() }()
	var scrapes []scrape
	start := time.Now()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for done := false; !done; {
		select {
		case err := <-exited:
			if err != nil {
				return fmt.Errorf("demo: %w", err)
			}
			done = true
		case <-tick.C:
			if s, err := get(url, time.Since(start)); err == nil {
				scrapes = append(scrapes, s)
			}
		}
	}
	if len(scrapes) < 4 {
		return fmt.Errorf("only %d scrapes", len(scrapes))
	}
	caption := fmt.Sprintf("quorumlock dashboard panels, computed from %d scrapes of `redlock demo %s` (every %s, window %s); rendered by bench/cmd/dashpng",
		len(scrapes), strings.Join(args[1:3], " "), every, window)
	return render(out, caption, scrapes, window)
}

// scrape is one read of /metrics: series (name{labels}) -> value.
type scrape struct {
	at     float64 // seconds since the start
	series map[string]float64
}

func get(url string, at time.Duration) (scrape, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return scrape{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return scrape{}, err
	}
	s := scrape{at: at.Seconds(), series: map[string]float64{}}
	for line := range strings.Lines(string(body)) {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		var v float64
		if _, err := fmt.Sscan(line[i+1:], &v); err == nil {
			s.series[line[:i]] = v
		}
	}
	return s, nil
}
