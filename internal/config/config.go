package config

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// Config is every setting a process of ordersaga reads. Each field names its variable.
type Config struct {
	TemporalAddress   string // TEMPORAL_ADDRESS
	TemporalNamespace string // TEMPORAL_NAMESPACE
	RedisAddr         string // REDIS_ADDR
	RedisKeyPrefix    string // REDIS_KEY_PREFIX
	MySQLDSN          string // MYSQL_DSN
	SQLitePath        string // SQLITE_PATH (used when MYSQL_DSN is empty)
	LogFormat         string // LOG_FORMAT: json or text
	LogLevel          string // LOG_LEVEL: debug, info, warn, error
	// WorkerConcurrency bounds concurrent activity and workflow task executions per worker.
	WorkerConcurrency int // WORKER_CONCURRENCY
	// PaymentTimeout is the default time an order waits for payment.
	PaymentTimeout time.Duration // ORDER_PAYMENT_TIMEOUT
	Currency       string        // CURRENCY
	// HTTPAddr is where the order API (the starter) listens.
	HTTPAddr string // HTTP_ADDR
	// PaymentWebhookSecrets are the HMAC secrets a Payment-Signature may be made with; several while a
	// key is rotated (comma-separated in the variable).
	PaymentWebhookSecrets []string // PAYMENT_WEBHOOK_SECRET
	// AdminToken is the bearer token of the admin endpoints (inventory).
	AdminToken string // ADMIN_TOKEN
	// CallerIdentity says who calls the order API ("", "header:<Header-Name>" or "bearer-hs256"), with
	// CallerTokenSecret the secret of bearer-hs256 (api.ParseIdentity checks both and names them).
	CallerIdentity    string // CALLER_IDENTITY
	CallerTokenSecret string // CALLER_TOKEN_SECRET

	// Reconciliation (the starter's Schedule, the worker's runs); 0 means the workflow's default.
	ReconcileInterval time.Duration // RECONCILE_INTERVAL: between scheduled runs (default 1m)
	ReconcileBatch    int           // RECONCILE_BATCH: SKUs (and open orders) per activity (default 200)
	ReconcileGrace    time.Duration // RECONCILE_GRACE: holds and open orders younger than this are left alone (default 2m)
	// ReserveDBFallback lets a reserve fall back to the database deduct alone when Redis is unreachable.
	ReserveDBFallback bool // RESERVE_DB_FALLBACK (default true)
	// IdempotencyRetention is how long an Idempotency-Key (its row and its Redis marker) is remembered after
	// its last use, and while its order may be open; the order API treats a key unused for longer as new, and
	// the cleanup schedule deletes its records. At least ORDER_PAYMENT_TIMEOUT + RECONCILE_GRACE.
	IdempotencyRetention time.Duration // IDEMPOTENCY_RETENTION (default 24h)
	// PlaceConcurrency bounds the order API's Update-with-Start calls in flight per process; placements past it
	// wait for one to end (placement.Config.MaxPlacing).
	PlaceConcurrency int // PLACE_CONCURRENCY (default 48)
	// PlacePerSKU bounds the units of one SKU being placed at once across the deployment: past them a request
	// waits its turn in the SKU's line (admission.LineRules.PerSKU). Every order API process must have the same.
	PlacePerSKU int // PLACE_PER_SKU (default 64)
	// LineGrace is how late a request in a line may come back after its Retry-After before it loses its
	// ticket (admission.LineRules.Grace). Every order API process must have the same.
	LineGrace time.Duration // LINE_GRACE (default 5s)
	// MetricsAddr is where the worker serves /metrics ("" = not served; the starter serves its own).
	MetricsAddr string // METRICS_ADDR
	// Traces: OpenTelemetry tracing is on when either is set (platform.StartTracing). The OTLP exporter reads
	// the other OTEL_EXPORTER_OTLP_* variables itself; only the gRPC protocol is built in.
	TracesEndpoint string // OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, else OTEL_EXPORTER_OTLP_ENDPOINT
	TracesFile     string // TRACES_FILE: spans as JSON lines, appended to this file
	// AdminAddr is where the starter serves /metrics and the detailed /readyz, apart from the public API
	// ("" = both on HTTP_ADDR, as the HTTP contract lists them).
	AdminAddr string // ADMIN_ADDR

	// Temporal client security (temporal_tls.go): TLS is on when TemporalTLS is, which any of the other
	// settings implies.
	TemporalTLS           bool   // TEMPORAL_TLS
	TemporalTLSCA         string // TEMPORAL_TLS_CA: PEM file of the CA(s) the server's certificate chains to ("" = the system's)
	TemporalTLSCert       string // TEMPORAL_TLS_CERT: PEM file of the client certificate (mTLS), with TEMPORAL_TLS_KEY
	TemporalTLSKey        string // TEMPORAL_TLS_KEY: PEM file of its private key
	TemporalTLSServerName string // TEMPORAL_TLS_SERVER_NAME: the name the server's certificate must carry ("" = the host of TEMPORAL_ADDRESS)
	TemporalAPIKey        string // TEMPORAL_API_KEY: bearer API key (Temporal Cloud)

	// Redis connection (redis.go): exactly one of RedisAddr (one server), RedisClusterAddrs (a Redis Cluster)
	// and RedisSentinelAddrs (Sentinel failover) is set; the credentials and TLS apply to any of them.
	RedisClusterAddrs     []string // REDIS_CLUSTER_ADDRS: seed addresses of the cluster (comma-separated)
	RedisSentinelAddrs    []string // REDIS_SENTINEL_ADDRS: addresses of the sentinels (comma-separated)
	RedisSentinelMaster   string   // REDIS_SENTINEL_MASTER: the name the sentinels monitor the master under
	RedisSentinelPassword string   // REDIS_SENTINEL_PASSWORD: the sentinels' own password
	RedisUsername         string   // REDIS_USERNAME: ACL user ("" = the default user)
	RedisPassword         string   // REDIS_PASSWORD: ACL password or requirepass
	RedisTLS              bool     // REDIS_TLS
	RedisTLSCAFile        string   // REDIS_TLS_CA_FILE: PEM file of the CA(s) Redis's certificate chains to ("" = the system's)
	RedisTLSServerName    string   // REDIS_TLS_SERVER_NAME: the name Redis's certificate must carry ("" = the host of each address)
	// RedisMarkerReplicas is how many replicas must acknowledge an idempotency marker before the order API
	// counts it written (REDIS_MARKER_REPLICAS; default 0 with REDIS_ADDR, 1 with a cluster or Sentinel).
	RedisMarkerReplicas int

	// Pools and concurrency.
	MySQLMaxOpenConns    int           // MYSQL_MAX_OPEN_CONNS (default 64)
	MySQLMaxIdleConns    int           // MYSQL_MAX_IDLE_CONNS (default 64, at most MYSQL_MAX_OPEN_CONNS)
	MySQLConnMaxLifetime time.Duration // MYSQL_CONN_MAX_LIFETIME (default 30m)
	RedisPoolSize        int           // REDIS_POOL_SIZE: connections per process (default 128)
	// WorkerLocalActivityConcurrency bounds the local activities (the reservation's hot path) a worker runs
	// at once.
	WorkerLocalActivityConcurrency int // WORKER_LOCAL_ACTIVITY_CONCURRENCY (default WORKER_CONCURRENCY)

	// Refunds configures the refund sender and the check of refunds left unsent (refunds.go).
	Refunds Refunds
}

// DefaultReconcileGrace is what an unset RECONCILE_GRACE means: workflows.DefaultReconcileGrace (this package
// imports nothing of the module; internal/platform's tests check the two agree).
const DefaultReconcileGrace = 2 * time.Minute

// Defaults used when a variable is unset.
var defaults = Config{
	TemporalAddress:      "127.0.0.1:7233",
	TemporalNamespace:    "default",
	LogFormat:            "json",
	LogLevel:             "info",
	WorkerConcurrency:    200,
	PaymentTimeout:       15 * time.Minute,
	Currency:             "CNY",
	HTTPAddr:             "127.0.0.1:8080",
	ReserveDBFallback:    true,
	IdempotencyRetention: 24 * time.Hour,
	PlaceConcurrency:     48,              // placement.DefaultMaxPlacing (internal/apiprocess: TestConfigDefaultsAreThePlacementService)
	PlacePerSKU:          64,              // admission.DefaultPerSKU
	LineGrace:            5 * time.Second, // admission.DefaultGrace
	MySQLMaxOpenConns:    64,
	MySQLMaxIdleConns:    64,
	MySQLConnMaxLifetime: 30 * time.Minute,
	RedisPoolSize:        128,
}

// FromEnv reads the configuration through getenv (os.Getenv in mains, a map in tests).
func FromEnv(getenv func(string) string) (Config, error) {
	c := defaults
	var errs []error
	str := func(name string, dst *string) {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			*dst = v
		}
	}
	str("TEMPORAL_ADDRESS", &c.TemporalAddress)
	str("TEMPORAL_NAMESPACE", &c.TemporalNamespace)
	str("MYSQL_DSN", &c.MySQLDSN)
	str("SQLITE_PATH", &c.SQLitePath)
	str("LOG_FORMAT", &c.LogFormat)
	str("LOG_LEVEL", &c.LogLevel)
	str("CURRENCY", &c.Currency)
	str("HTTP_ADDR", &c.HTTPAddr)
	str("ADMIN_TOKEN", &c.AdminToken)
	str("CALLER_IDENTITY", &c.CallerIdentity)
	str("CALLER_TOKEN_SECRET", &c.CallerTokenSecret)
	if v := strings.TrimSpace(getenv("PAYMENT_WEBHOOK_SECRET")); v != "" {
		for _, s := range strings.Split(v, ",") {
			s = strings.TrimSpace(s)
			if s == "" {
				errs = append(errs, errors.New("PAYMENT_WEBHOOK_SECRET: an empty secret in the comma-separated list"))
				continue
			}
			c.PaymentWebhookSecrets = append(c.PaymentWebhookSecrets, s)
		}
	}
	count := func(name string, dst *int, lo, hi int) {
		if err := readInt(getenv, name, dst, lo, hi); err != nil {
			errs = append(errs, err)
		}
	}
	count("WORKER_CONCURRENCY", &c.WorkerConcurrency, 1, maxPool)
	count("PLACE_CONCURRENCY", &c.PlaceConcurrency, 1, maxPool)
	count("PLACE_PER_SKU", &c.PlacePerSKU, 1, 100000)
	if strings.TrimSpace(getenv("PLACE_QUEUE")) != "" {
		// Removed with the per-process queue it bounded: a value that silently meant nothing would mislead.
		errs = append(errs, errors.New("PLACE_QUEUE: no longer read; the line at the front door replaced the per-process queue (see PLACE_PER_SKU and LINE_GRACE)"))
	}
	if v := strings.TrimSpace(getenv("ORDER_PAYMENT_TIMEOUT")); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 || d > 24*time.Hour {
			errs = append(errs, fmt.Errorf("ORDER_PAYMENT_TIMEOUT=%q: want a Go duration between 1s and 24h, e.g. 15m", v))
		} else {
			c.PaymentTimeout = d
		}
	}
	str("METRICS_ADDR", &c.MetricsAddr)
	dur := func(name string, dst *time.Duration, lo time.Duration) {
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			return
		}
		d, err := time.ParseDuration(v)
		if err != nil || d < lo {
			errs = append(errs, fmt.Errorf("%s=%q: want a Go duration of at least %s, e.g. 1m", name, v, lo))
			return
		}
		*dst = d
	}
	dur("RECONCILE_INTERVAL", &c.ReconcileInterval, time.Second)
	dur("RECONCILE_GRACE", &c.ReconcileGrace, time.Second)
	dur("LINE_GRACE", &c.LineGrace, time.Second)
	if v := strings.TrimSpace(getenv("IDEMPOTENCY_RETENTION")); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			errs = append(errs, fmt.Errorf("IDEMPOTENCY_RETENTION=%q: want a positive Go duration, e.g. 24h", v))
		} else {
			c.IdempotencyRetention = d
		}
	}
	if err := c.checkRetention(); err != nil {
		errs = append(errs, err)
	}
	count("RECONCILE_BATCH", &c.ReconcileBatch, 1, 10000)
	if v := strings.TrimSpace(getenv("RESERVE_DB_FALLBACK")); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("RESERVE_DB_FALLBACK=%q: want true or false", v))
		} else {
			c.ReserveDBFallback = b
		}
	}
	if _, _, err := net.SplitHostPort(c.HTTPAddr); err != nil {
		errs = append(errs, fmt.Errorf("HTTP_ADDR=%q: want host:port, e.g. 127.0.0.1:8080", c.HTTPAddr))
	}
	str("ADMIN_ADDR", &c.AdminAddr)
	if c.AdminAddr != "" {
		if _, _, err := net.SplitHostPort(c.AdminAddr); err != nil {
			errs = append(errs, fmt.Errorf("ADMIN_ADDR=%q: want host:port, e.g. 127.0.0.1:9090", c.AdminAddr))
		} else if c.AdminAddr == c.HTTPAddr {
			errs = append(errs, fmt.Errorf("ADMIN_ADDR=%q: the same as HTTP_ADDR; the admin listener must be apart from the public API", c.AdminAddr))
		}
	}
	errs = append(errs, c.readTracing(getenv)...)
	errs = append(errs, c.readPools(getenv)...)
	errs = append(errs, c.readRedis(getenv)...)
	errs = append(errs, c.readTemporalSecurity(getenv)...)
	errs = append(errs, c.readRefunds(getenv)...)
	if c.LogFormat != "json" && c.LogFormat != "text" {
		errs = append(errs, fmt.Errorf("LOG_FORMAT=%q: want json or text", c.LogFormat))
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("LOG_LEVEL=%q: want debug, info, warn or error", c.LogLevel))
	}
	if len(c.Currency) != 3 || strings.ToUpper(c.Currency) != c.Currency {
		errs = append(errs, fmt.Errorf("CURRENCY=%q: want a 3-letter upper-case ISO 4217 code", c.Currency))
	}
	return c, errors.Join(errs...)
}

// checkRetention refuses an IDEMPOTENCY_RETENTION shorter than the longest an order stays open after its
// key's last answer: its payment window (ORDER_PAYMENT_TIMEOUT) and the reconciliation's grace past its
// deadline (RECONCILE_GRACE). A key is never forgotten while its order is open anyway, but a shorter retention
// would lean on that for every order.
func (c Config) checkRetention() error {
	grace := c.ReconcileGrace
	if grace <= 0 {
		grace = DefaultReconcileGrace
	}
	if c.IdempotencyRetention < c.PaymentTimeout+grace {
		return fmt.Errorf("IDEMPOTENCY_RETENTION=%s is shorter than ORDER_PAYMENT_TIMEOUT=%s + RECONCILE_GRACE=%s: a key must be remembered while its order may be open; want at least %s",
			c.IdempotencyRetention, c.PaymentTimeout, grace, c.PaymentTimeout+grace)
	}
	return nil
}

// readInt reads the integer variable name into *dst when it is set; a value that is not an integer between lo
// and hi is an error that names the variable, and leaves *dst alone.
func readInt(getenv func(string) string, name string, dst *int, lo, hi int) error {
	v := strings.TrimSpace(getenv(name))
	if v == "" {
		return nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return fmt.Errorf("%s=%q: want an integer between %d and %d", name, v, lo, hi)
	}
	*dst = n
	return nil
}

// RequireAPISecrets checks that the order API's secrets are set (the starter outside the local stack, which
// never falls back to a default secret or token).
func (c Config) RequireAPISecrets() error {
	var errs []error
	if len(c.PaymentWebhookSecrets) == 0 {
		errs = append(errs, errors.New("PAYMENT_WEBHOOK_SECRET is not set: the HMAC secret(s) of the payment webhook, comma-separated for rotation"))
	}
	if c.AdminToken == "" {
		errs = append(errs, errors.New("ADMIN_TOKEN is not set: the bearer token of the inventory admin endpoints"))
	}
	return errors.Join(errs...)
}

// RequireStores checks that the real stores are configured (processes outside the local stack).
func (c Config) RequireStores() error {
	var errs []error
	if form, _ := c.RedisForm(); form == RedisNone {
		errs = append(errs, ErrRedisNotSet)
	}
	if c.MySQLDSN == "" && c.SQLitePath == "" {
		errs = append(errs, errors.New("MYSQL_DSN is not set: a DSN such as user:pass@tcp(127.0.0.1:3306)/ordersaga (or SQLITE_PATH for a single-machine SQLite file)"))
	}
	return errors.Join(errs...)
}

// readTracing reads where spans go (OTLP over gRPC, a file) and refuses an OTLP protocol other than gRPC.
func (c *Config) readTracing(getenv func(string) string) []error {
	var errs []error
	c.TracesEndpoint = strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
	if c.TracesEndpoint == "" {
		c.TracesEndpoint = strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_ENDPOINT"))
	}
	c.TracesFile = strings.TrimSpace(getenv("TRACES_FILE"))
	for _, name := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if v := strings.TrimSpace(getenv(name)); v != "" && v != "grpc" {
			errs = append(errs, fmt.Errorf("%s=%q: only grpc is supported (the collector's OTLP/gRPC port, usually 4317)", name, v))
		}
	}
	return errs
}

// TracingOn reports whether spans are recorded (an OTLP endpoint or TRACES_FILE is set).
func (c Config) TracingOn() bool { return c.TracesEndpoint != "" || c.TracesFile != "" }
