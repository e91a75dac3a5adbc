// Package apiprocess runs the order API as a process does: the API's settings read from the configuration,
// its listener and the admin listener (ADMIN_ADDR), the markers' backfill, and the graceful drain. The
// starter and the local stack both run the API through it, so a new setting of the API is one edit here.
//
// May import: internal/api, internal/config, OpenTelemetry and the standard library (checked by internal/layers).
package apiprocess

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"

	"github.com/ordersaga/ordersaga/internal/api"
	"github.com/ordersaga/ordersaga/internal/config"
)

// AdminDrain bounds the admin listener's graceful shutdown (a scrape or a readiness check).
const AdminDrain = 5 * time.Second

// Server is the order API, listening, not yet serving.
type Server struct {
	handler *api.Server
	ln      net.Listener
	adminLn net.Listener // nil without ADMIN_ADDR
	logger  *slog.Logger
	traced  bool // a server span per request (cfg.TracingOn)
}

// Check validates the API's settings of cfg that Open would refuse (the caller identity), so a process can
// refuse a bad configuration before it dials anything.
func Check(cfg config.Config) error {
	_, err := api.ParseIdentity(cfg.CallerIdentity, cfg.CallerTokenSecret)
	return err
}

// Open completes deps with the API's settings of cfg (currency, payment timeout, idempotency retention, the
// Redis-down fallback, the webhook secrets, the admin token, the caller identity) and listens on ln and, when
// cfg.AdminAddr is set, on the admin address. The caller gives the process's parts in deps: logger, Temporal
// client, stores and metrics registry. On an error ln is closed.
func Open(cfg config.Config, deps api.Deps, ln net.Listener) (*Server, error) {
	identity, err := api.ParseIdentity(cfg.CallerIdentity, cfg.CallerTokenSecret)
	if err != nil {
		ln.Close()
		return nil, err
	}
	var adminLn net.Listener
	if cfg.AdminAddr != "" {
		if adminLn, err = net.Listen("tcp", cfg.AdminAddr); err != nil {
			ln.Close()
			return nil, fmt.Errorf("listen on ADMIN_ADDR=%s: %w", cfg.AdminAddr, err)
		}
		deps.Logger.Info("admin listener: /metrics and the detailed /readyz", "addr", adminLn.Addr().String())
	}
	deps.Currency = cfg.Currency
	deps.PaymentTimeout = cfg.PaymentTimeout
	deps.Retention = cfg.IdempotencyRetention
	deps.RedisDownFallback = cfg.ReserveDBFallback
	deps.MaxPlacing = cfg.PlaceConcurrency
	deps.PlacePerSKU, deps.LineGrace = int64(cfg.PlacePerSKU), cfg.LineGrace
	deps.WebhookSecrets = cfg.PaymentWebhookSecrets
	deps.AdminToken = cfg.AdminToken
	deps.Identity = identity
	deps.SeparateAdmin = adminLn != nil
	return &Server{handler: api.NewServer(deps), ln: ln, adminLn: adminLn, logger: deps.Logger, traced: cfg.TracingOn()}, nil
}

// Addr is the API's listening address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Serve serves the API (and the admin listener) until ctx is done, then gives the requests in flight drain to
// finish, and returns once the API, the admin listener and the background work (the markers' backfill) have
// stopped.
func (s *Server) Serve(ctx context.Context, drain time.Duration) error {
	stopped := make(chan error, 1)
	go func() { stopped <- s.handler.Run(ctx) }()
	adminDone := make(chan error, 1)
	if s.adminLn != nil {
		go func() {
			adminDone <- api.Serve(ctx, s.adminLn, s.handler.Admin(), s.logger.With("listener", "admin"), AdminDrain)
		}()
	} else {
		adminDone <- nil
	}
	var h http.Handler = s.handler
	if s.traced {
		h = Traced(h)
	}
	err := api.Serve(ctx, s.ln, h, s.logger, drain)
	return errors.Join(err, <-adminDone, <-stopped)
}

// Traced wraps the order API's handler in an OpenTelemetry server span per request, named by its route
// ("POST /v1/orders"), continuing the trace a caller sent in traceparent. The spans of the order it places
// (Update-with-Start, the workflow, the activities, Redis and SQL) are its children.
func Traced(h http.Handler) http.Handler {
	return otelhttp.NewHandler(h, "order-api", otelhttp.WithSpanNameFormatter(routeName))
}

// routeName names a request's span by the route that served it (the mux sets r.Pattern while it serves, and
// the span is renamed then), by its method alone until then.
func routeName(_ string, r *http.Request) string {
	if r.Pattern != "" {
		return r.Pattern
	}
	return r.Method
}
