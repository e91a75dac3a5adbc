package sale_test

import (
	"bytes"
	"context"
	"database/sql"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/flashsale/internal/sale"
	"github.com/ordersaga/ordersaga/internal/api"
	"github.com/ordersaga/ordersaga/internal/sagatest"
)

// botStack is the order API on httptest over the in-process Temporal server, the worker and the test's
// stores (as TestShortFlashSaleKeepsEveryInvariant), with orders that expire in 3 s.
func botStack(t *testing.T) (url string, db *sql.DB) {
	t.Helper()
	env := sagatest.Start(t)
	srv := httptest.NewServer(api.NewServer(api.Deps{
		Temporal: env.Client, Store: env.Store, Redis: env.Redis, Currency: "CNY",
		PaymentTimeout: 3 * time.Second, WebhookSecrets: []string{testSecret}, AdminToken: testAdmin,
	}))
	t.Cleanup(srv.Close)
	sqlDB, err := env.Store.DB().DB()
	if err != nil {
		t.Fatal(err)
	}
	return srv.URL, sqlDB
}

// botConfig is a short sale by bots only: every winner pays at once (the run is quiet as soon as the firing
// ends), no same-key resends, plenty of stock.
func botConfig(t *testing.T, url, runID string) sale.Config {
	cfg := sale.DefaultConfig()
	cfg.Target, cfg.AdminToken, cfg.WebhookSecret, cfg.RunID = url, testAdmin, testSecret, runID
	cfg.Duration, cfg.Concurrency, cfg.Buyers = 3*time.Second, 4, 3
	cfg.BotRatio, cfg.BotAttempts = 1, 8
	cfg.SKUs, cfg.Stock, cfg.Qty = 1, 100, 1
	cfg.PayRatio, cfg.CancelRatio, cfg.LatePayRatio, cfg.DuplicateRatio = 1, 0, 0, 0
	cfg.QuietTimeout, cfg.Grace, cfg.SampleEvery, cfg.ProgressEvery = 30*time.Second, 10*time.Second, 200*time.Millisecond, time.Second
	cfg.ProviderCheck = sale.ProviderCheckOff // sagatest's worker sends no refunds (the chaos run checks them at a provider)
	cfg.Out = filepath.Join(t.TempDir(), "report")
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func runSale(t *testing.T, cfg sale.Config, db *sql.DB) *sale.Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := sale.Run(ctx, cfg, sale.Options{Progress: io.Discard, DB: db})
	if err != nil {
		t.Fatal(err)
	}
	var sum bytes.Buffer
	rep.WriteSummary(&sum)
	t.Logf("\n%s", sum.String())
	return rep
}

// serverKeepsPerUserLimit reports whether the API under test has the per-user limit: its inventory view
// (GET /v1/inventory/{sku}) has the per_user_limit member (docs/http-api.md).
func serverKeepsPerUserLimit(t *testing.T, url string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := sale.NewClient(url, testAdmin, testSecret, 2, 10*time.Second)
	defer c.Close()
	sku := "FS-PROBE-" + strings.ReplaceAll(time.Now().UTC().Format("150405.000000"), ".", "")
	if _, err := c.PutInventory(ctx, sku, 1, 100, 0, 0); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/v1/inventory/"+sku, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/inventory/%s: %d %s", sku, resp.StatusCode, body)
	}
	_, ok := sale.PerUserLimitOf(body)
	return ok
}

// Bots against the real API: every order of a bot is its own (a fresh Idempotency-Key, a new order ID) and
// names the bot's user; a bot wins more than once when nothing limits it. Then, when the server has the
// per-user limit, no bot holds more than the limit and every bot that won holds exactly the limit.
func TestBotsAgainstTheRealAPI(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two short flash sales")
	}
	url, db := botStack(t)
	run := strings.ReplaceAll(time.Now().UTC().Format("150405.000"), ".", "")

	t.Run("no limit: bots reuse their user with fresh keys", func(t *testing.T) {
		cfg := botConfig(t, url, "bn"+run)
		rep := runSale(t, cfg, db)
		if !rep.Verdict.OK() {
			t.Fatalf("verdict not OK: %+v %v", rep.Verdict.Counts, rep.Verdict.Findings)
		}
		if rep.BotRequests <= rep.Sent {
			t.Errorf("bots sent %d orders in %d visits: a bot must order again after its answer", rep.BotRequests, rep.Sent)
		}
		logged := 0 // each order of a bot is a request of its own in the log (undersold_units)
		for _, g := range rep.Snapshot.Places.Groups {
			logged += len(g.SentUS)
		}
		if int64(logged) != rep.BotRequests {
			t.Errorf("%d requests logged, bots sent %d", logged, rep.BotRequests)
		}
		keys := map[string]string{}
		perUser := map[string]int{}
		for _, o := range rep.Snapshot.Orders {
			if !strings.HasPrefix(o.UserID, "fsb-") || !strings.Contains(o.Key, "-b") {
				t.Errorf("order %s of user %q key %q: want a bot's (fsb-, key …-b<n>)", o.OrderID, o.UserID, o.Key)
			}
			if prev, ok := keys[o.Key]; ok {
				t.Errorf("key %s names orders %s and %s", o.Key, prev, o.OrderID)
			}
			keys[o.Key] = o.OrderID
			perUser[o.UserID]++
		}
		most := 0
		for _, n := range perUser {
			most = max(most, n)
		}
		if most < 2 {
			t.Errorf("orders per bot user %v: without a limit a bot must win more than once", perUser)
		}
		if rep.Counts["limit_exceeded"] != 0 || rep.Verdict.UserLimits != nil {
			t.Errorf("no limit set, yet limit_exceeded %d, user limits %+v", rep.Counts["limit_exceeded"], rep.Verdict.UserLimits)
		}
	})

	t.Run("limit 2: every bot that won holds exactly 2", func(t *testing.T) {
		if !serverKeepsPerUserLimit(t, url) {
			t.Skip("the server's inventory view has no per_user_limit (GET /v1/inventory/{sku}): the per-user limit " +
				"is not implemented on this branch yet; this test runs once it is")
		}
		const limit = 2
		cfg := botConfig(t, url, "bl"+run)
		cfg.PerUserLimit = limit
		rep := runSale(t, cfg, db)
		if !rep.Verdict.OK() {
			t.Fatalf("verdict not OK: %+v %v", rep.Verdict.Counts, rep.Verdict.Findings)
		}
		if rep.Counts["limit_exceeded"] == 0 {
			t.Errorf("no request answered limit-exceeded: %v", rep.Counts)
		}
		if rep.Counts["error"] != 0 {
			t.Errorf("%d errors: %v %v", rep.Counts["error"], rep.Errors, rep.ErrorSamples)
		}
		if len(rep.Verdict.UserLimits) != 2 {
			t.Fatalf("user limits %+v, want the api's and the db's", rep.Verdict.UserLimits)
		}
		for _, u := range rep.Verdict.UserLimits {
			if u.Limit != limit || u.MaxUnits != limit || u.OverLimit != 0 || u.AtLimit != u.Holders || u.Holders == 0 {
				t.Errorf("%s: %+v; want every holder at exactly %d", u.Source, u, limit)
			}
		}
		// The database's own count: Σ qty of each bot's RESERVING, AWAITING_PAYMENT and PAID orders.
		held := map[string]int64{}
		for _, o := range rep.Snapshot.DB.Orders {
			if o.Status == ordersaga.StatusReserving || o.Status == ordersaga.StatusAwaitingPayment || o.Status == ordersaga.StatusPaid {
				for _, l := range o.Lines {
					held[o.UserID] += l.Qty
				}
			}
		}
		if len(held) == 0 {
			t.Fatal("no bot holds anything")
		}
		for user, n := range held {
			if n != limit {
				t.Errorf("user %s holds %d units, want exactly %d", user, n, limit)
			}
		}
	})
}
