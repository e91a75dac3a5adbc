package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"

	"github.com/ordersaga/ordersaga/internal/admission"
	"github.com/ordersaga/ordersaga/internal/placement"
	"github.com/ordersaga/ordersaga/internal/redisstock"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
)

// The line's defaults (PLACE_PER_SKU, LINE_GRACE): admission's.
const (
	DefaultPlacePerSKU = admission.DefaultPerSKU
	DefaultLineGrace   = admission.DefaultGrace
)

// Default waits of the handlers that call Temporal.
const (
	DefaultPlaceTimeout  = placement.DefaultPlaceTimeout
	DefaultUpdateTimeout = 30 * time.Second // pay and cancel (a cancel waits for its compensation)
	retryAfterSeconds    = 2
)

// Deps is what the order API needs.
type Deps struct {
	Logger   *slog.Logger
	Temporal client.Client
	Store    *sqlstore.Store
	Redis    *redisstock.Store
	// Gate is the admission gate and the idempotency-key markers of the sold-out fast path (nil: one of the
	// server's own on Redis; a process has one).
	Gate *admission.Gate
	// Registry receives the API's metrics and is what /metrics serves (the starter registers the Temporal
	// SDK's metrics on it too). Nil means a registry of the server's own.
	Registry *prometheus.Registry
	// Currency is the ISO 4217 code of every price and payment (CURRENCY).
	Currency string
	// PaymentTimeout is how long a new order waits for payment (ORDER_PAYMENT_TIMEOUT; 0 = the workflow's default).
	PaymentTimeout time.Duration
	// Retention is how long an Idempotency-Key is remembered (IDEMPOTENCY_RETENTION; 0 = 24h).
	Retention time.Duration
	// RedisDownFallback places orders through the database alone while Redis is unreachable
	// (RESERVE_DB_FALLBACK; the processes set it from the configuration): false answers 503 then.
	RedisDownFallback bool
	// MaxPlacing bounds the Update-with-Start calls in flight (PLACE_CONCURRENCY; 0 = placement.DefaultMaxPlacing).
	MaxPlacing int
	// PlacePerSKU and LineGrace are the line's rules (PLACE_PER_SKU, LINE_GRACE; 0: DefaultPlacePerSKU and
	// DefaultLineGrace), set on the gate.
	PlacePerSKU int64
	LineGrace   time.Duration
	// WebhookSecrets verify Payment-Signature (PAYMENT_WEBHOOK_SECRET); AdminToken guards the inventory
	// admin endpoints (ADMIN_TOKEN). Empty means every such request is refused.
	WebhookSecrets []string
	AdminToken     string
	// Identity says who calls (CALLER_IDENTITY; nil: nobody is checked, and the API must sit behind a gateway
	// that does it): a caller places orders for itself only, and reads and cancels its own orders only.
	Identity Identity
	// PlaceTimeout and UpdateTimeout bound the waits on Temporal (0 = the defaults above; PlaceTimeout is the
	// placement service's).
	PlaceTimeout  time.Duration
	UpdateTimeout time.Duration
	// Now is the clock of the signature tolerance (nil = time.Now).
	Now func() time.Time
	// SeparateAdmin takes /metrics and the detailed /readyz off the API: Server.Admin serves them (the
	// starter's ADMIN_ADDR), and the API's /readyz says only ready or not ready.
	SeparateAdmin bool
}

// server is the dependencies the handlers share.
type server struct {
	Deps
	metrics *Metrics
	// placement places orders (POST /v1/orders) and owns the background work.
	placement *placement.Service
}

// Server is the order API: the handler of every route of routes.go, and the background work (the backfill of
// the sold-out fast path's idempotency markers) that its process stops with Run.
type Server struct {
	http.Handler
	s     *server
	admin http.Handler
}

// Admin is the admin listener's handler (ADMIN_ADDR): /healthz, the detailed /readyz and /metrics. Serve it
// only where operators reach it, and set Deps.SeparateAdmin so the API stops serving them.
func (h *Server) Admin() http.Handler { return h.admin }

// Run returns once ctx is done and the server's background work has stopped (a backfill in progress is
// cancelled; none starts after): placement.Service.Run. The process runs it beside Serve and waits for it
// before it exits. A server whose Run is never called keeps its background work until the process ends.
func (h *Server) Run(ctx context.Context) error { return h.s.placement.Run(ctx) }

// NewServer returns the order API (see Server), and starts the backfill of the idempotency markers when
// Redis needs it.
func NewServer(d Deps) *Server {
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.Registry == nil {
		d.Registry = prometheus.NewRegistry()
	}
	if d.UpdateTimeout <= 0 {
		d.UpdateTimeout = DefaultUpdateTimeout
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Gate == nil {
		d.Gate = admission.New(d.Redis)
	}
	d.Gate.SetLineRules(admission.LineRules{PerSKU: d.PlacePerSKU, Grace: d.LineGrace})
	s := &server{Deps: d, metrics: NewMetrics(d.Registry)}
	s.placement = placement.New(placement.Config{
		Logger: d.Logger, Temporal: d.Temporal, Store: d.Store, Stock: d.Gate,
		Currency: d.Currency, PaymentTimeout: d.PaymentTimeout, PlaceTimeout: d.PlaceTimeout,
		Retention: d.Retention, KeepAs: keepAs, Places: s.metrics.places, RedisDownFallback: d.RedisDownFallback,
		MaxPlacing: d.MaxPlacing, InFlight: s.metrics.placing, Waiting: s.metrics.waiting, Line: s.metrics.line,
	})
	s.placement.Backfill()
	mux := http.NewServeMux()
	addRoutes(mux, s)
	admin := http.NewServeMux()
	addAdminRoutes(admin, s)
	return &Server{Handler: s.metrics.instrument(problemsForUnmatched(mux)), s: s, admin: problemsForUnmatched(admin)}
}

// HTTP server timeouts: a reservation or a cancel may take tens of seconds, so writes get more than
// DefaultPlaceTimeout; headers and bodies (64 KiB at most) must come quickly.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 15 * time.Second
	writeTimeout      = DefaultPlaceTimeout + 30*time.Second
	idleTimeout       = 2 * time.Minute
)

// Serve serves h on ln until ctx is done, then shuts down gracefully: it stops accepting connections and
// lets the requests in flight finish, for at most drain.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, logger *slog.Logger, drain time.Duration) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	logger.Info("shutting down: draining requests in flight", "drain", drain)
	// A fresh context: the one that asked for the shutdown is already done.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), drain)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve %s: %w", ln.Addr(), err)
	}
	logger.Info("shut down")
	return nil
}
