// Command reconcile runs one reconciliation now, through the worker, and prints its summary: what drifted
// between Redis and the database, and what was repaired (see docs/reconciliation.md). The scheduled runs
// are the same workflow; this one runs beside them.
//
//	reconcile [-batch 200] [-grace 2m] [-json] [-timeout 10m]
//
// Configuration comes from the environment (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE; with MYSQL_DSN or
// SQLITE_PATH it also lists the run's stock_anomalies rows).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/ordersaga/ordersaga/activities"
	"github.com/ordersaga/ordersaga/internal/config"
	"github.com/ordersaga/ordersaga/internal/platform"
	"github.com/ordersaga/ordersaga/internal/reconcile"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args, os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "reconcile:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	rcfg, err := reconcile.ConfigFromEnv(getenv)
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	fs.SetOutput(stdout)
	batch := fs.Int("batch", rcfg.BatchSize, "SKUs (and open orders) per activity")
	grace := fs.Duration("grace", rcfg.Grace, "leave alone holds and open orders younger than this")
	asJSON := fs.Bool("json", false, "print the summary as JSON")
	timeout := fs.Duration("timeout", 10*time.Minute, "give up waiting for the run after this long")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	cfg, err := config.FromEnv(getenv)
	if err != nil {
		return err
	}
	logger := platform.NewLogger(os.Stderr, "text", "warn")
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	c, err := platform.DialTemporal(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer c.Close()

	in := rcfg.Input()
	in.BatchSize, in.Grace = *batch, *grace
	id, sum, err := reconcile.RunOnce(ctx, c, in)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			WorkflowID string `json:"workflow_id"`
			activities.ReconcileSummary
			Repairs int `json:"Repairs"`
		}{id, sum, sum.Repairs()})
	}
	fmt.Fprintf(stdout, "reconciliation %s\n%s\n", id, sum)
	if cfg.MySQLDSN == "" && cfg.SQLitePath == "" {
		return nil
	}
	store, err := activities.OpenDB(ctx, cfg.MySQLDSN, cfg.SQLitePath)
	if err != nil {
		return err
	}
	defer store.Close()
	rows, err := store.Anomalies(ctx, id)
	if err != nil {
		return err
	}
	if len(rows) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SKU\tORDER\tKIND\tACTION\tEXPECTED\tOBSERVED\tDETAIL")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.SKU, r.OrderID, r.Kind, r.Action, num(r.Expected), num(r.Observed), r.Detail)
	}
	return tw.Flush()
}

func num(p *int64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprint(*p)
}
