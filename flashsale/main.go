// Command flashsale hammers a running ordersaga stack through its HTTP API like a flash sale and judges the
// run by the invariants: it exits 1 when any unit was oversold or lost, an order was deducted twice, got
// stuck or a payment was refunded twice, a buyer was told sold out while units were provably free, or
// (checked at the refund provider) a refund did not reach the provider exactly once. See
// flashsale/internal/sale and README.md.
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

	"golang.org/x/term"

	"github.com/ordersaga/ordersaga/flashsale/internal/sale"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	code := run(ctx, os.Args, os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// errUsage is a bad command line (exit status 2, like flag's).
var errUsage = errors.New("usage")

// run is the whole command: 0 when the verdict is OK, 1 when it is not (or the run failed), 2 on bad usage.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	cfg, rejudge, err := parseFlags(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		if !errors.Is(err, errUsage) {
			fmt.Fprintln(stderr, "flashsale:", err)
		}
		return 2
	}
	terminal := false
	if f, ok := stderr.(*os.File); ok {
		terminal = term.IsTerminal(int(f.Fd()))
	}
	if cfg.FloodPair {
		res, err := sale.FloodPair(ctx, cfg, sale.Options{Progress: stderr, Terminal: terminal})
		if err != nil {
			fmt.Fprintln(stderr, "flashsale:", err)
			return 1
		}
		res.WriteSummary(stdout)
		if res.Lost() > 0 {
			fmt.Fprintf(stderr, "flashsale: %d winner requests got no answer\n", res.Lost())
			return 1
		}
		return 0
	}
	var rep *sale.Report
	if rejudge != "" {
		rep, err = sale.ReadReport(rejudge)
		if err == nil {
			rep, err = sale.Rejudge(ctx, cfg, sale.Options{}, rep)
		}
	} else {
		rep, err = sale.Run(ctx, cfg, sale.Options{Progress: stderr, Terminal: terminal})
	}
	if err != nil {
		fmt.Fprintln(stderr, "flashsale:", err)
		return 1
	}
	rep.WriteSummary(stdout)
	jsonPath, htmlPath, err := rep.WriteFiles(cfg.Out)
	if err != nil {
		fmt.Fprintln(stderr, "flashsale:", err)
		return 1
	}
	fmt.Fprintf(stdout, "report: %s and %s\n", htmlPath, jsonPath)
	if !rep.Verdict.OK() {
		return 1
	}
	return 0
}

// parseFlags reads the command line; rejudge is the report directory of --rejudge ("" for a run).
func parseFlags(args []string, getenv func(string) string, stderr io.Writer) (cfg sale.Config, rejudge string, err error) {
	cfg = sale.DefaultConfig()
	cfg.Concurrency = 0
	name := "flashsale"
	if len(args) > 0 {
		name = args[0]
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: %s --target URL [flags]\n\nRuns a flash sale against an ordersaga API and checks that nothing was oversold or lost.\nExit status: 0 verdict OK, 1 a check failed (or the run could not complete), 2 bad flags.\n\n", name)
		fs.PrintDefaults()
	}
	fs.StringVar(&cfg.Target, "target", cfg.Target, "base URL of the order API")
	fs.StringVar(&cfg.AdminToken, "admin-token", getenv("ADMIN_TOKEN"), "bearer token of PUT /v1/inventory (default $ADMIN_TOKEN)")
	fs.StringVar(&cfg.WebhookSecret, "webhook-secret", getenv("PAYMENT_WEBHOOK_SECRET"), "HMAC secret of the payment webhook; the first of a comma-separated list signs (default $PAYMENT_WEBHOOK_SECRET)")
	fs.IntVar(&cfg.Buyers, "buyers", cfg.Buyers, "distinct buyers (user IDs) the requests come from")
	fs.Float64Var(&cfg.Rate, "rate", cfg.Rate, "requests per second offered (open loop); 0 = closed loop of --concurrency buyers")
	fs.IntVar(&cfg.Concurrency, "concurrency", 0, "closed-loop buyers in parallel (default 64), or with --rate the most requests in flight (default 4096; more are skipped and counted)")
	fs.DurationVar(&cfg.Duration, "duration", cfg.Duration, "how long to fire buyers")
	fs.IntVar(&cfg.SKUs, "skus", cfg.SKUs, "number of SKUs on sale (each gets --stock units)")
	fs.StringVar(&cfg.SKUPrefix, "sku-prefix", "", "SKU names are <prefix><n> (default FS-<run-id>-: fresh SKUs every run)")
	fs.Int64Var(&cfg.Stock, "stock", cfg.Stock, "units per SKU, set through PUT /v1/inventory before the sale")
	fs.Int64Var(&cfg.PriceCents, "price-cents", cfg.PriceCents, "unit price set with the stock")
	fs.Int64Var(&cfg.Qty, "qty", cfg.Qty, "units per order")
	fs.StringVar(&cfg.Currency, "currency", orDefault(getenv("CURRENCY"), cfg.Currency), "currency of the payments (default $CURRENCY or CNY)")
	fs.Float64Var(&cfg.PayRatio, "pay-ratio", cfg.PayRatio, "share of accepted orders paid at once through the signed webhook")
	fs.Float64Var(&cfg.CancelRatio, "cancel-ratio", cfg.CancelRatio, "share of accepted orders cancelled")
	fs.Float64Var(&cfg.LatePayRatio, "late-pay-ratio", cfg.LatePayRatio, "share of accepted orders paid after they expired (must be refunded once)")
	fs.Float64Var(&cfg.WrongAmountShare, "wrong-amount-share", cfg.WrongAmountShare, "share of the orders to pay whose first payment is of amount − 1 (refunded once); half of them then pay right, the rest expire")
	fs.Float64Var(&cfg.DuplicateRatio, "duplicate-ratio", cfg.DuplicateRatio, "share of orders, payments and cancels sent twice with the same key")
	fs.Int64Var(&cfg.PerUserLimit, "per-user-limit", cfg.PerUserLimit, "per-user limit set on every SKU with the stock (PUT per_user_limit): the most units one user may hold; 0 = none")
	fs.IntVar(&cfg.StockShards, "stock-shards", cfg.StockShards, "stock_shards set on every SKU with the stock (PUT stock_shards): the Redis counters each SKU's stock is split over, 1-64 (a SKU's shards only grow); 0 = the field is not sent")
	fs.Float64Var(&cfg.BotRatio, "bot-ratio", cfg.BotRatio, "share of the buyers that are bots: a bot orders the same SKU again as the same user, with a fresh Idempotency-Key each time, whatever the answer")
	fs.IntVar(&cfg.BotAttempts, "bot-attempts", cfg.BotAttempts, "most orders a bot sends per visit (while the sale fires)")
	fs.DurationVar(&cfg.Patience, "patience", cfg.Patience, "how long a buyer answered 503 with Retry-After keeps coming back (as told, same Idempotency-Key and body) from its first arrival before it leaves without an answer; 0 = one-shot buyers, a 503 is an error")
	fs.Int64Var(&cfg.MaxOvertakes, "max-overtakes", cfg.MaxOvertakes, "fail the verdict when more buyers than this were placed while one who arrived at least 100 ms earlier for the same SKU still waited and was then told sold out or left; -1 = reported, not judged")
	fs.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "seed of every random choice (a run is repeatable)")
	fs.StringVar(&cfg.Out, "out", cfg.Out, "directory for report.json and report.html")
	fs.DurationVar(&cfg.QuietTimeout, "quiet-timeout", cfg.QuietTimeout, "how long to wait for quiet after the firing and the last payment deadline")
	fs.DurationVar(&cfg.Grace, "grace", cfg.Grace, "how long past its deadline an order may stay open before it counts as stuck (one RECONCILE_INTERVAL)")
	fs.DurationVar(&cfg.SampleEvery, "sample-every", cfg.SampleEvery, "interval of the stock samples")
	fs.DurationVar(&cfg.ProgressEvery, "progress-every", cfg.ProgressEvery, "interval of the progress lines when stderr is not a terminal")
	fs.DurationVar(&cfg.RequestTimeout, "request-timeout", cfg.RequestTimeout, "timeout of one HTTP request")
	fs.StringVar(&cfg.MySQLDSN, "mysql-dsn", "", "also judge from this MySQL database (the stack's MYSQL_DSN)")
	fs.StringVar(&cfg.SQLitePath, "sqlite-path", "", "also judge from this SQLite file (the local stack's database)")
	fs.StringVar(&cfg.ProviderURL, "provider", orDefault(getenv("REFUND_PROVIDER_URL"), cfg.ProviderURL), "refund provider whose report (GET <provider>/v1/refunds) the run's refunds are checked against (default $REFUND_PROVIDER_URL or "+sale.DefaultProviderURL+")")
	fs.StringVar(&cfg.ProviderCheck, "provider-check", cfg.ProviderCheck, "check the refunds at the provider: auto (when it answers its report; the report says when it did not), on (an unreachable provider is an error), off")
	fs.StringVar(&cfg.RunID, "run-id", "", "name of the run (default: derived from the clock)")
	fs.BoolVar(&cfg.FloodPair, "flood-pair", false, "instead of a sale, measure the orders accepted per second by --concurrency closed-loop winners for --duration, then again during an open-loop flood of orders of a sold-out SKU at --flood-x times that rate; prints a FLOOD line (exit 1 when a winner got no answer)")
	fs.Float64Var(&cfg.FloodX, "flood-x", cfg.FloodX, "with --flood-pair: the flood's rate as a multiple of the accepted rate without it")
	fs.Float64Var(&cfg.FloodMinRate, "flood-min-rate", cfg.FloodMinRate, "with --flood-pair: the flood's least rate (requests/s)")
	fs.IntVar(&cfg.FloodInflight, "flood-inflight", cfg.FloodInflight, "with --flood-pair: the most flood requests in flight (more are skipped and counted)")
	fs.DurationVar(&cfg.FloodWarmup, "flood-warmup", cfg.FloodWarmup, "with --flood-pair: the time before each phase's counted --duration")
	fs.StringVar(&rejudge, "rejudge", "", "take the verdict of the run whose report is in this directory again, once the stack has settled, and rewrite its report there (or in --out); uses --target (default: the run's), --grace and the database flags")
	if err := fs.Parse(args[min(1, len(args)):]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return cfg, "", err
		}
		return cfg, "", errUsage
	}
	if fs.NArg() > 0 {
		return cfg, "", fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if rejudge != "" {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if !set["target"] {
			rep, err := sale.ReadReport(rejudge)
			if err != nil {
				return cfg, "", err
			}
			cfg.Target = rep.Param("target")
		}
		if !set["out"] {
			cfg.Out = rejudge
		}
		if err := cfg.ValidateProvider(); err != nil {
			return cfg, "", err
		}
		return cfg, rejudge, nil
	}
	if cfg.Concurrency == 0 {
		cfg.Concurrency = 64
		if cfg.Rate > 0 {
			cfg.Concurrency = 4096
		}
	}
	if err := cfg.Validate(); err != nil {
		return cfg, "", err
	}
	return cfg, "", nil
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
