// Command reconcile runs one reconciliation now, through the worker, and prints its summary: what drifted
// between Redis and the database, and what was repaired (see docs/reconciliation.md), and the money of the
// last days: captured, applied and refunded per day and currency, and any discrepancy (docs/payments.md).
// The scheduled runs are the same workflow; this one runs beside them.
//
//	reconcile [-batch 200] [-grace 2m] [-money-days 2] [-json] [-timeout 10m]
//
// Configuration comes from the environment (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE; with MYSQL_DSN or
// SQLITE_PATH it also lists the run's stock_anomalies rows and the money_anomalies of the days checked).
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/ordersaga/ordersaga/activities"
	"github.com/ordersaga/ordersaga/internal/config"
	"github.com/ordersaga/ordersaga/internal/platform"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
	"github.com/ordersaga/ordersaga/workflows"
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
	cfg, err := config.FromEnv(getenv)
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	fs.SetOutput(stdout)
	batch := fs.Int("batch", cmp.Or(cfg.ReconcileBatch, workflows.DefaultReconcileBatch), "SKUs (and open orders) per activity (default $RECONCILE_BATCH or 200)")
	grace := fs.Duration("grace", cmp.Or(cfg.ReconcileGrace, workflows.DefaultReconcileGrace), "leave alone holds and open orders younger than this (default $RECONCILE_GRACE or 2m)")
	moneyDays := fs.Int("money-days", workflows.DefaultReconcileMoneyDays, "UTC days up to today whose money is reconciled")
	asJSON := fs.Bool("json", false, "print the summary as JSON")
	timeout := fs.Duration("timeout", 10*time.Minute, "give up waiting for the run after this long")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if *moneyDays < 1 || *moneyDays > workflows.MaxReconcileMoneyDays {
		return fmt.Errorf("-money-days %d: want 1-%d", *moneyDays, workflows.MaxReconcileMoneyDays)
	}
	logger := platform.NewLogger(os.Stderr, "text", "warn")
	platform.RouteRedisLogs(logger)
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	c, err := platform.DialTemporal(ctx, cfg, logger, nil)
	if err != nil {
		return err
	}
	defer c.Close()

	in := platform.ReconcileInput(cfg)
	in.BatchSize, in.Grace, in.MoneyDays = *batch, *grace, *moneyDays
	id, sum, err := platform.RunOnce(ctx, c, in)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			WorkflowID string `json:"workflow_id"`
			activities.ReconcileSummary
			Repairs int                     `json:"Repairs"`
			Money   activities.MoneySummary `json:"Money"`
		}{id, sum.ReconcileSummary, sum.Repairs(), sum.Money})
	}
	fmt.Fprintf(stdout, "reconciliation %s\n%s\n", id, sum)
	writeMoney(stdout, sum.Money)
	if cfg.MySQLDSN == "" && cfg.SQLitePath == "" {
		return nil
	}
	store, err := sqlstore.Open(ctx, cfg.MySQLDSN, cfg.SQLitePath)
	if err != nil {
		return err
	}
	defer store.Close()
	rows, err := store.Anomalies(ctx, id)
	if err != nil {
		return err
	}
	if len(rows) > 0 {
		tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "SKU\tORDER\tKIND\tACTION\tEXPECTED\tOBSERVED\tDETAIL")
		for _, r := range rows {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.SKU, r.OrderID, r.Kind, r.Action, num(r.Expected), num(r.Observed), r.Detail)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return writeMoneyAnomalies(ctx, stdout, store, sum.Money)
}

// writeMoney prints the money of each day checked, per currency (amounts in minor units).
func writeMoney(w io.Writer, m activities.MoneySummary) {
	if len(m.Days) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "DAY\tCURRENCY\tCAPTURED\tAPPLIED\tREFUNDED\tUNSETTLED\tREFUNDS UNSENT\t")
	for _, d := range m.Days {
		fmt.Fprintf(tw, "%s\t%s\t%s (%d)\t%s (%d)\t%s (%d)\t%s (%d)\t%d\t\n", d.Day, d.Currency, d.Captured, d.CapturedN,
			d.Applied, d.AppliedN, d.Refunded, d.RefundedN, d.Unsettled, d.UnsettledN, d.RefundsUnsent)
	}
	_ = tw.Flush()
}

// writeMoneyAnomalies lists the money_anomalies rows of the days the run checked (each recorded once, by the
// first run that saw it).
func writeMoneyAnomalies(ctx context.Context, w io.Writer, store *sqlstore.Store, m activities.MoneySummary) error {
	if m.Findings == 0 {
		return nil
	}
	days := map[string]bool{}
	for _, d := range m.Days {
		days[d.Day] = true
	}
	var rows []sqlstore.MoneyAnomalyRow
	for _, d := range slices.Sorted(maps.Keys(days)) {
		r, err := store.MoneyAnomalies(ctx, d)
		if err != nil {
			return err
		}
		rows = append(rows, r...)
	}
	if len(rows) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "DAY\tKIND\tSUBJECT\tORDER\tEVENT\tEXPECTED\tOBSERVED\tFIRST RUN\tDETAIL")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Day, r.Kind, r.Subject, r.OrderID, r.EventID,
			num(r.Expected), num(r.Observed), r.RunID, r.Detail)
	}
	return tw.Flush()
}

func num(p *int64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprint(*p)
}
