package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/quorumlock/quorumlock/internal/lockmetrics"
)

// The demo serves the metrics of the promlock module, under the same names,
// from internal/lockmetrics' own text exposition: the root module, which
// holds this command, takes no Prometheus dependency.

// demoMetricsServed runs after the demo's summary while /metrics is still
// served (a test scrapes there); it is given the address served.
var demoMetricsServed = func(addr string) {}

// serveDemoMetrics serves st's metrics at http://addr/metrics; stop shuts
// the server down. The class of a status lock key is its service.
func serveDemoMetrics(addr string, st *demoStats, stdout io.Writer) (stop func(), err error) {
	classes, err := lockmetrics.NewClasses(func(key string) string { return strings.TrimPrefix(key, st.prefix) }, len(demoServices))
	if err != nil {
		return nil, err
	}
	text := lockmetrics.NewText()
	st.metrics = lockmetrics.NewRecorder(text, classes)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, usageErr("demo", "--metrics-addr %s: %v", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_, _ = text.WriteTo(w)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(stdout, "redlock demo: metrics server: %v\n", err)
		}
	}()
	fmt.Fprintf(stdout, "metrics: http://%s/metrics\n", ln.Addr())
	return func() {
		demoMetricsServed(ln.Addr().String())
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	}, nil
}
