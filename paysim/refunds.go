package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"text/tabwriter"
	"time"

	"github.com/ordersaga/ordersaga/internal/refundsim"
)

// runRefunds is `paysim refunds`: the report of a `paysim serve`, as text or JSON.
func runRefunds(ctx context.Context, args []string, getenv func(string) string, stdout, _ io.Writer) error {
	var (
		provider string
		asJSON   bool
	)
	fs := newFlags("paysim refunds", "paysim refunds [flags]", stdout)
	fs.StringVar(&provider, "provider", or(getenv("REFUND_PROVIDER_URL"), refundsim.DefaultURL),
		"base URL of the refund provider simulator (default REFUND_PROVIDER_URL, else "+refundsim.DefaultURL+")")
	fs.BoolVar(&asJSON, "json", false, "print the report as JSON")
	if _, err := parseN(fs, args, 0, "refunds takes no argument"); err != nil {
		return err
	}
	rep, err := refundsim.Fetch(ctx, provider, &http.Client{Timeout: 30 * time.Second})
	if err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	printReport(stdout, rep)
	return nil
}

// printReport writes a one-line summary, then a line per refund and per refused key.
func printReport(w io.Writer, rep refundsim.Report) {
	t := rep.Totals
	fmt.Fprintf(w, "%d refunds executed, %d refused; %d requests: %d replays, %d mismatches, %d failed, %d timed out, %d blackholed, %d bad signatures, %d bad requests\n",
		len(rep.Refunds), len(rep.Refused), t.Requests, t.Replays, t.Mismatches, t.Failed, t.TimedOut, t.Blackholed, t.BadSignature, t.BadRequest)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, e := range rep.Refunds {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\trequests %d\n", e.EventID, e.OrderID, e.AmountCents, e.Currency, e.RefundID, e.Requests)
	}
	for _, r := range rep.Refused {
		fmt.Fprintf(tw, "%s\trefused (%s)\t%s\trequests %d\n", r.EventID, r.Code, r.Reason, r.Requests)
	}
	_ = tw.Flush()
}
