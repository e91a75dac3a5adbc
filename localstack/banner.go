package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/ordersaga/ordersaga/internal/platform"
	"github.com/ordersaga/ordersaga/workflows"
)

// printBanner tells the user where everything is and how to place a first order.
func printBanner(w io.Writer, s *stack) {
	cfg := s.opts.cfg
	fmt.Fprintln(w)
	if s.opts.dataDir != "" {
		fmt.Fprintln(w, "ordersaga local stack is up. Ctrl-C stops it; running it again resumes with the same orders.")
	} else {
		fmt.Fprintln(w, "ordersaga local stack is up, in memory (--ephemeral): Ctrl-C stops it and forgets everything.")
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "  %s\t%s\n", k, v) }
	row("Order API", s.apiURL)
	if a := s.opts.cfg.AdminAddr; a != "" {
		row("Metrics", "http://"+a+"/metrics   (ADMIN_ADDR)")
	} else {
		row("Metrics", s.apiURL+"/metrics")
	}
	if s.ui != nil {
		row("Temporal UI", s.ui.URL()+"/namespaces/"+cfg.TemporalNamespace+"/workflows")
	}
	temporal := cfg.TemporalAddress + " (in-process), namespace " + cfg.TemporalNamespace
	if s.opts.externalTemporal {
		temporal = cfg.TemporalAddress + " (TEMPORAL_ADDRESS), namespace " + cfg.TemporalNamespace
	}
	row("Temporal", temporal)
	if s.opts.externalRedis {
		row("Redis", cfg.RedisWhere())
	} else {
		row("Redis", cfg.RedisAddr+" (embedded)")
	}
	if s.sqlite != "" {
		row("Database", "SQLite "+s.sqlite)
	} else {
		row("Database", "MySQL (MYSQL_DSN)")
	}
	if s.opts.dataDir != "" {
		row("Data directory", s.opts.dataDir)
	} else {
		row("Data directory", "none: --ephemeral keeps everything in memory")
	}
	if s.opts.externalProvider {
		row("Refund provider", cfg.Refunds.ProviderURL+" (REFUND_PROVIDER_URL)")
	} else {
		row("Refund provider", cfg.Refunds.ProviderURL+" (simulator; its ledger: go run ./paysim refunds)")
	}
	row("Webhook secret", strings.Join(cfg.PaymentWebhookSecrets, ",")+"   (PAYMENT_WEBHOOK_SECRET)")
	row("Admin token", cfg.AdminToken+"   (ADMIN_TOKEN)")
	row("Payment timeout", cfg.PaymentTimeout.String()+"   (ORDER_PAYMENT_TIMEOUT)")
	row("Reconciliation", "every "+platform.ReconcileInterval(s.opts.cfg).String()+", Schedule "+workflows.ReconcileScheduleID+"   (RECONCILE_INTERVAL)")
	var skus []string
	for _, r := range s.skus {
		skus = append(skus, fmt.Sprintf("%s (%d left, %d.%02d %s)", r.SKU, r.Stock, r.PriceCents/100, r.PriceCents%100, cfg.Currency))
	}
	if len(skus) == 0 {
		skus = []string{"none yet"}
	}
	label := "SKUs"
	if len(s.demo) > 0 {
		label = "Demo SKUs"
	}
	row(label, strings.Join(skus, ", "))
	tw.Flush()
	fmt.Fprintln(w)

	if len(s.skus) == 0 {
		fmt.Fprintln(w, "Create a SKU:")
		fmt.Fprintf(w, "  curl -s -X PUT %s/v1/inventory/SKU-1 -H 'Authorization: Bearer %s' -H 'Content-Type: application/json' -d '{\"stock\":100,\"price_cents\":999}'\n",
			s.apiURL, cfg.AdminToken)
		fmt.Fprintln(w)
	}
	sku := firstOrderSKU(s.skus)
	fmt.Fprintln(w, "Place a first order:")
	fmt.Fprintf(w, "  %s\n", firstOrderCurl(s.apiURL, sku))
	fmt.Fprintln(w)
	if s.opts.dataDir != "" {
		fmt.Fprintf(w, "Logs go to stderr; state lives in %s (delete it to start afresh).\n", filepath.Clean(s.opts.dataDir))
	}
}

// firstOrderCurl is the copy-paste command for a first order (the README's tour starts with the same one).
func firstOrderCurl(apiURL, sku string) string {
	return fmt.Sprintf(`curl -s -X POST %s/v1/orders -H 'Content-Type: application/json' -H 'Idempotency-Key: first-order' -d '{"user_id":"u-1","lines":[{"sku":"%s","qty":2}]}'`,
		apiURL, sku)
}

// firstOrderSKU is the SKU of the first-order curl: the demo's SKU-1 if it is there, else the first SKU with
// stock.
func firstOrderSKU(rows []inventoryRow) string {
	pick := "SKU-1"
	for i := len(rows) - 1; i >= 0; i-- {
		if rows[i].SKU == "SKU-1" {
			return rows[i].SKU
		}
		if rows[i].Stock >= 2 {
			pick = rows[i].SKU
		}
	}
	return pick
}
