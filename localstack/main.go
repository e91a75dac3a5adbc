// Command localstack runs the whole of ordersaga on one machine, in one process, with nothing to install:
// an in-process Temporal server (state in a SQLite file of the data directory) and the Temporal UI, Redis
// (embedded, or a real one: REDIS_ADDR, REDIS_CLUSTER_ADDRS, REDIS_SENTINEL_ADDRS), the database (SQLite in the data directory, or MYSQL_DSN), the worker, the order
// API and the reconciliation Schedule, plus a few demo SKUs. It prints where everything is and a curl for a
// first order. Ctrl-C stops it; running it again resumes with the same orders.
//
//	go run ./localstack            # see --help for ports and the data directory
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	setStackRuntime(os.Getenv)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		// The first Ctrl-C stops the stack cleanly; a second one kills it the default way.
		<-ctx.Done()
		stop()
	}()
	err := run(ctx, os.Args, os.Getenv, os.Stdout, os.Stderr)
	stop()
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "localstack:", err)
		os.Exit(1)
	}
}

// run starts the stack, prints where it is, and stops it when ctx is done.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	opts, err := parseOptions(args, getenv, stderr)
	if err != nil {
		return err
	}
	if opts.pprofAddr != "" {
		stopProfiler, err := serveProfiler(opts.pprofAddr)
		if err != nil {
			return err
		}
		defer stopProfiler()
	}
	s, err := start(ctx, opts, stderr)
	if err != nil {
		if ctx.Err() != nil {
			return nil // Ctrl-C while starting: start stopped what it had started
		}
		return err
	}
	printBanner(stdout, s)
	<-ctx.Done()
	fmt.Fprintln(stdout, "stopping: finishing in-flight work (Ctrl-C again to kill)")
	return s.stop()
}
