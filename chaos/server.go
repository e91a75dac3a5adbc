package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"

	"github.com/ordersaga/ordersaga/internal/devserver"
	"github.com/ordersaga/ordersaga/workflows"
)

// serveTemporal is the hidden subcommand "temporal-server --db FILE --port P": a Temporal server with its
// state in the SQLite file, serving until the context ends (SIGTERM) or the process is killed. Started
// again on the same file and port, it resumes with the workflows it had persisted.
func serveTemporal(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("temporal-server", flag.ContinueOnError)
	db := fs.String("db", "", "SQLite file of the server's state (required)")
	port := fs.Int("port", 0, "frontend gRPC port (required)")
	ns := fs.String("namespace", "default", "namespace to create")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *db == "" || *port == 0 {
		return errors.New("--db and --port are required")
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	t, err := devserver.StartTemporal(ctx, devserver.TemporalOptions{
		IP: "127.0.0.1", FrontendPort: *port, DBFile: *db,
		Namespace: *ns, SearchAttributes: workflows.SearchAttributes(), Logger: logger,
	})
	if err != nil {
		return fmt.Errorf("start on port %d with %s: %w", *port, *db, err)
	}
	fmt.Fprintln(os.Stderr, "temporal server serving on", t.Address())
	<-ctx.Done()
	return t.Stop()
}
