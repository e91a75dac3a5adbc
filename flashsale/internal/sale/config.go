package sale

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/ordersaga/ordersaga"
)

// Config is one run's parameters (the command's flags).
type Config struct {
	Target        string
	AdminToken    string
	WebhookSecret string
	// Buyers is the number of distinct user IDs the requests come from.
	Buyers int
	// Rate is the offered request rate (open loop); 0 means a closed loop of Concurrency buyers.
	Rate float64
	// Concurrency is the number of closed-loop buyers, or with Rate the most requests in flight.
	Concurrency int
	Duration    time.Duration
	SKUs        int
	SKUPrefix   string
	Stock       int64
	PriceCents  int64
	Qty         int64
	Currency    string
	// Shares of the accepted orders: paid on time, cancelled, paid after expiry; the rest expire.
	PayRatio     float64
	CancelRatio  float64
	LatePayRatio float64
	// WrongAmountShare is the share of the orders to pay whose provider first sends a payment of amount − 1
	// (it must be answered rejected_amount and refunded once): half of them then send the right amount
	// (the order is PAID), the other half nothing more (the order expires).
	WrongAmountShare float64
	// DuplicateRatio is the share of requests (orders and payments) sent a second time with the same key.
	DuplicateRatio float64
	// PerUserLimit is the per-user limit set on every SKU with the stock (PUT /v1/inventory per_user_limit):
	// the most units of a SKU one user_id may hold; 0 = no limit (the field is then left out of the PUT).
	PerUserLimit int64
	// StockShards is the stock_shards set on every SKU with the stock (PUT /v1/inventory stock_shards): the
	// Redis counters each SKU's stock is split over, 1 to MaxStockShards; 0 = not sent (a new SKU has 1).
	StockShards int
	// BotRatio is the share of the buyers (user IDs) that are bots: a bot does not stop at its answer but
	// orders the same SKU again as the same user_id, with a fresh Idempotency-Key each time, up to
	// BotAttempts requests per visit (while the sale is firing), like a scalper against "two per customer".
	BotRatio    float64
	BotAttempts int
	// Patience is how long a sale buyer keeps coming back, from its first arrival, when answered 503 with
	// Retry-After: it waits as told (at most MaxRetryAfter, plus up to 20 % jitter) and sends the same key and
	// body again, until a final answer or its patience is over (it leaves without an answer). 0 = one-shot
	// buyers: a 503 is an error, as before. Bots and resends do not wait.
	Patience time.Duration
	// MaxOvertakes, when 0 or more, makes the overtakes a check of the verdict (more fail the run); -1 (the
	// default) reports them without judging (fairness.go).
	MaxOvertakes int64
	Seed         uint64
	Out          string
	// QuietTimeout bounds the wait for quiet, counted from the later of the end of firing and the last
	// payment deadline of an order the run placed.
	QuietTimeout time.Duration
	// Grace is how long after its deadline an order may still be open (docs/design.md I5: one reconciliation
	// interval).
	Grace       time.Duration
	SampleEvery time.Duration
	// ProgressEvery is the interval of the plain progress lines (not on a terminal).
	ProgressEvery time.Duration
	// RequestTimeout bounds one HTTP request.
	RequestTimeout time.Duration
	MySQLDSN       string
	SQLitePath     string
	// ProviderURL is the refund provider whose report (GET {ProviderURL}/v1/refunds) the run's refunds are
	// checked against; ProviderCheck is ProviderCheckAuto, On or Off (see provider.go).
	ProviderURL   string
	ProviderCheck string
	// RunID names the run; it prefixes idempotency keys and, by default, the SKUs.
	RunID string
	// FloodPair runs the flood pair (FloodPair in flood.go) instead of a sale: Concurrency closed-loop winners
	// on an in-stock SKU for Duration, then again on a fresh one while an open-loop flood of orders of a sold-out
	// SKU is offered at FloodX times the winners' accepted rate of the first phase (at least FloodMinRate), with
	// at most FloodInflight flood requests in flight. Each phase is counted after FloodWarmup.
	FloodPair     bool
	FloodX        float64
	FloodMinRate  float64
	FloodInflight int
	FloodWarmup   time.Duration
}

// DefaultConfig is the command's defaults.
func DefaultConfig() Config {
	return Config{
		Target:         "http://127.0.0.1:8080",
		Buyers:         10000,
		Rate:           0,
		Concurrency:    64,
		Duration:       10 * time.Second,
		SKUs:           1,
		Stock:          100,
		PriceCents:     999,
		Qty:            1,
		Currency:       "CNY",
		PayRatio:       0.5,
		CancelRatio:    0.1,
		LatePayRatio:   0.05,
		DuplicateRatio: 0.05,
		BotAttempts:    20,
		Patience:       60 * time.Second,
		MaxOvertakes:   -1,
		Seed:           1,
		Out:            "flashsale-report",
		QuietTimeout:   2 * time.Minute,
		Grace:          time.Minute,
		SampleEvery:    500 * time.Millisecond,
		ProgressEvery:  2 * time.Second,
		RequestTimeout: 30 * time.Second,
		FloodX:         10,
		FloodMinRate:   100,
		FloodInflight:  1024,
		FloodWarmup:    2 * time.Second,
		ProviderURL:    DefaultProviderURL,
		ProviderCheck:  ProviderCheckAuto,
	}
}

// MaxStockShards is the most stock_shards the API takes (PUT /v1/inventory: 1 to 64).
const MaxStockShards = 64

var namePattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// Validate checks the configuration and fills RunID and SKUPrefix when empty; the error names the flag.
func (c *Config) Validate() error {
	var errs []error
	u, err := url.Parse(c.Target)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("--target %q: want an http(s) URL such as http://127.0.0.1:8080", c.Target))
	}
	c.Target = strings.TrimRight(c.Target, "/")
	if c.AdminToken == "" {
		errs = append(errs, errors.New("--admin-token (or ADMIN_TOKEN) is required to set the stock"))
	}
	if c.WebhookSecret == "" && c.PayRatio+c.LatePayRatio > 0 && !c.FloodPair { // the flood pair pays nothing
		errs = append(errs, errors.New("--webhook-secret (or PAYMENT_WEBHOOK_SECRET) is required to pay orders"))
	}
	if c.Buyers < 1 {
		errs = append(errs, fmt.Errorf("--buyers %d: want at least 1", c.Buyers))
	}
	if c.Rate < 0 {
		errs = append(errs, fmt.Errorf("--rate %g: want 0 (closed loop) or a positive rate", c.Rate))
	}
	if c.Concurrency < 1 {
		errs = append(errs, fmt.Errorf("--concurrency %d: want at least 1", c.Concurrency))
	}
	if c.Duration <= 0 {
		errs = append(errs, fmt.Errorf("--duration %s: want a positive duration", c.Duration))
	}
	if c.SKUs < 1 || c.SKUs > 1000 {
		errs = append(errs, fmt.Errorf("--skus %d: want 1-1000", c.SKUs))
	}
	if c.Stock < 0 {
		errs = append(errs, fmt.Errorf("--stock %d: must not be negative", c.Stock))
	}
	if c.PriceCents < 0 || c.PriceCents > ordersaga.MaxPriceCents {
		errs = append(errs, fmt.Errorf("--price-cents %d: want 0 to %d", c.PriceCents, ordersaga.MaxPriceCents))
	}
	if c.Qty < 1 || c.Qty > 1000 {
		errs = append(errs, fmt.Errorf("--qty %d: want 1-1000", c.Qty))
	}
	if len(c.Currency) != 3 {
		errs = append(errs, fmt.Errorf("--currency %q: want a 3-letter ISO 4217 code", c.Currency))
	}
	for name, r := range map[string]float64{"--pay-ratio": c.PayRatio, "--cancel-ratio": c.CancelRatio,
		"--late-pay-ratio": c.LatePayRatio, "--duplicate-ratio": c.DuplicateRatio, "--wrong-amount-share": c.WrongAmountShare} {
		if r < 0 || r > 1 {
			errs = append(errs, fmt.Errorf("%s %g: want a share between 0 and 1", name, r))
		}
	}
	if c.PerUserLimit < 0 {
		errs = append(errs, fmt.Errorf("--per-user-limit %d: must not be negative (0 = no limit)", c.PerUserLimit))
	}
	if c.PerUserLimit > 0 && c.Qty > c.PerUserLimit {
		errs = append(errs, fmt.Errorf("--qty %d is above --per-user-limit %d: every order would be refused", c.Qty, c.PerUserLimit))
	}
	if c.StockShards < 0 || c.StockShards > MaxStockShards {
		errs = append(errs, fmt.Errorf("--stock-shards %d: want 1-%d Redis counters per SKU, or 0 (the field is not sent)", c.StockShards, MaxStockShards))
	}
	if !(c.BotRatio >= 0 && c.BotRatio <= 1) { // NaN too
		errs = append(errs, fmt.Errorf("--bot-ratio %g: want a share of the buyers between 0 and 1", c.BotRatio))
	}
	if c.BotAttempts < 1 || c.BotAttempts > 10000 {
		errs = append(errs, fmt.Errorf("--bot-attempts %d: want 1-10000 requests per bot visit", c.BotAttempts))
	}
	if c.Patience < 0 {
		errs = append(errs, fmt.Errorf("--patience %s: must not be negative (0 = a 503 is an error, no retry)", c.Patience))
	}
	if c.MaxOvertakes < -1 {
		errs = append(errs, fmt.Errorf("--max-overtakes %d: want -1 (not judged) or a bound of 0 or more", c.MaxOvertakes))
	}
	if s := c.PayRatio + c.CancelRatio + c.LatePayRatio; s > 1+1e-9 {
		errs = append(errs, fmt.Errorf("--pay-ratio + --cancel-ratio + --late-pay-ratio = %g: must not exceed 1 (the rest expire)", s))
	}
	if c.WrongAmountShare > 0 && c.PriceCents*c.Qty < 1 {
		errs = append(errs, errors.New("--wrong-amount-share needs a price above 0 (a wrong amount is the right one − 1)"))
	}
	if c.Out == "" {
		errs = append(errs, errors.New("--out: want a directory for the report"))
	}
	if c.QuietTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--quiet-timeout %s: want a positive duration", c.QuietTimeout))
	}
	if c.FloodPair {
		if !(c.FloodX > 0) || math.IsInf(c.FloodX, 0) {
			errs = append(errs, fmt.Errorf("--flood-x %g: want a positive multiple of the accepted rate", c.FloodX))
		}
		if !(c.FloodMinRate >= 0) || math.IsInf(c.FloodMinRate, 0) {
			errs = append(errs, fmt.Errorf("--flood-min-rate %g: want 0 or a positive rate", c.FloodMinRate))
		}
		if c.FloodInflight < 1 {
			errs = append(errs, fmt.Errorf("--flood-inflight %d: want at least 1", c.FloodInflight))
		}
		if c.Rate > 0 {
			errs = append(errs, fmt.Errorf("--rate %g: the flood pair's winners are a closed loop of --concurrency (the flood is its own open loop)", c.Rate))
		}
		if c.FloodWarmup < 0 {
			errs = append(errs, fmt.Errorf("--flood-warmup %s: must not be negative", c.FloodWarmup))
		}
	}
	if err := c.ValidateProvider(); err != nil {
		errs = append(errs, err)
	}
	if c.MySQLDSN != "" && c.SQLitePath != "" {
		errs = append(errs, errors.New("--mysql-dsn and --sqlite-path: give at most one"))
	}
	if c.SampleEvery <= 0 {
		c.SampleEvery = 500 * time.Millisecond
	}
	if c.ProgressEvery <= 0 {
		c.ProgressEvery = 2 * time.Second
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = 30 * time.Second
	}
	if c.RunID == "" {
		c.RunID = fmt.Sprintf("%x", time.Now().UnixNano()/int64(time.Millisecond))
	}
	if !namePattern.MatchString(c.RunID) || len(c.RunID) > 24 {
		errs = append(errs, fmt.Errorf("--run-id %q: want 1-24 chars of A-Za-z0-9._-", c.RunID))
	}
	if c.SKUPrefix == "" {
		c.SKUPrefix = "FS-" + c.RunID + "-"
	}
	if !namePattern.MatchString(c.SKUPrefix+"0") || len(c.SKUPrefix) > 58 {
		errs = append(errs, fmt.Errorf("--sku-prefix %q: want up to 58 chars of A-Za-z0-9._-", c.SKUPrefix))
	}
	return errors.Join(errs...)
}

// ValidateProvider checks --provider and --provider-check (Validate does too; a --rejudge uses only these
// and the database's flags) and trims the URL; the error names the flag.
func (c *Config) ValidateProvider() error {
	var errs []error
	switch c.ProviderCheck {
	case ProviderCheckAuto, ProviderCheckOn, ProviderCheckOff:
	default:
		errs = append(errs, fmt.Errorf("--provider-check %q: want auto, on or off", c.ProviderCheck))
	}
	u, err := url.Parse(c.ProviderURL)
	if c.ProviderCheck != ProviderCheckOff && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
		errs = append(errs, fmt.Errorf("--provider %q: want the refund provider's http(s) base URL, such as %s", c.ProviderURL, DefaultProviderURL))
	}
	c.ProviderURL = strings.TrimRight(c.ProviderURL, "/")
	return errors.Join(errs...)
}

// Bots is the number of buyers that are bots: the share BotRatio of Buyers, rounded, and at least one when
// BotRatio is above 0. The bots are the user indices below it (user IDs fsb-<n>; the others are fsu-<n>).
func (c Config) Bots() int {
	if c.BotRatio <= 0 {
		return 0
	}
	return min(max(int(math.Round(c.BotRatio*float64(c.Buyers))), 1), c.Buyers)
}

// SKUNames are the run's SKUs.
func (c Config) SKUNames() []string {
	out := make([]string, c.SKUs)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", c.SKUPrefix, i+1)
	}
	return out
}

// Param is one parameter of a run as the report shows it (by its flag name).
type Param struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Params lists the run's parameters by flag name; secrets are left out and a DSN is redacted.
func (c Config) Params() []Param {
	mode := "closed loop"
	if c.Rate > 0 {
		mode = "open loop"
	}
	db := "none (API view only)"
	switch {
	case c.MySQLDSN != "":
		db = "mysql"
	case c.SQLitePath != "":
		db = "sqlite " + c.SQLitePath
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	limit := "none"
	if c.PerUserLimit > 0 {
		limit = strconv.FormatInt(c.PerUserLimit, 10)
	}
	shards := "not sent"
	if c.StockShards > 0 {
		shards = strconv.Itoa(c.StockShards)
	}
	return []Param{
		{"target", c.Target}, {"run-id", c.RunID}, {"mode", mode},
		{"rate", f(c.Rate)}, {"concurrency", strconv.Itoa(c.Concurrency)}, {"duration", c.Duration.String()},
		{"buyers", strconv.Itoa(c.Buyers)}, {"skus", strconv.Itoa(c.SKUs)}, {"sku-prefix", c.SKUPrefix},
		{"stock", strconv.FormatInt(c.Stock, 10)}, {"price-cents", strconv.FormatInt(c.PriceCents, 10)},
		{"qty", strconv.FormatInt(c.Qty, 10)}, {"currency", c.Currency},
		{"pay-ratio", f(c.PayRatio)}, {"cancel-ratio", f(c.CancelRatio)}, {"late-pay-ratio", f(c.LatePayRatio)},
		{"duplicate-ratio", f(c.DuplicateRatio)}, {"wrong-amount-share", f(c.WrongAmountShare)},
		{"per-user-limit", limit}, {"stock-shards", shards}, {"bot-ratio", f(c.BotRatio)}, {"bot-attempts", strconv.Itoa(c.BotAttempts)},
		{"patience", c.Patience.String()}, {"max-overtakes", strconv.FormatInt(c.MaxOvertakes, 10)},
		{"seed", strconv.FormatUint(c.Seed, 10)},
		{"quiet-timeout", c.QuietTimeout.String()}, {"grace", c.Grace.String()}, {"database", db},
		{"provider", c.ProviderURL}, {"provider-check", c.ProviderCheck},
	}
}
