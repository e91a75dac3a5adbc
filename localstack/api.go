package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/ordersaga/ordersaga/internal/api"
	"github.com/ordersaga/ordersaga/internal/platform"
	"github.com/ordersaga/ordersaga/internal/redisstock"
	"github.com/ordersaga/ordersaga/workflows"
)

// startAPI serves the order API on --http-addr: the same handler and graceful shutdown as the starter.
func (s *stack) startAPI(ctx context.Context, rs *redisstock.Store) error {
	cfg := s.opts.cfg
	identity, err := api.ParseIdentity(cfg.CallerIdentity, cfg.CallerTokenSecret)
	if err != nil {
		return err
	}
	ln, err := listen(cfg.HTTPAddr, flagHTTPAddr)
	if err != nil {
		return err
	}
	logger := s.log.With("component", "api")
	// ADMIN_ADDR as in the starter: /metrics and the detailed /readyz apart from the API.
	var adminLn net.Listener
	if cfg.AdminAddr != "" {
		if adminLn, err = net.Listen("tcp", cfg.AdminAddr); err != nil {
			ln.Close()
			return fmt.Errorf("listen on ADMIN_ADDR=%s: %w", cfg.AdminAddr, err)
		}
	}
	h := api.NewServer(api.Deps{
		Logger:            logger,
		Temporal:          s.client,
		Store:             s.store,
		Redis:             rs,
		Registry:          s.registry,
		Currency:          cfg.Currency,
		PaymentTimeout:    cfg.PaymentTimeout,
		Retention:         cfg.IdempotencyRetention,
		RedisDownFallback: cfg.ReserveDBFallback,
		WebhookSecrets:    cfg.PaymentWebhookSecrets,
		AdminToken:        cfg.AdminToken,
		Identity:          identity,
		SeparateAdmin:     adminLn != nil,
	})
	// Serve stops when its context is done; stop cancels it, after which Serve drains what is in flight.
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done, stopped := make(chan error, 1), make(chan error, 1)
	go func() { done <- api.Serve(sctx, ln, h, logger, apiDrain) }()
	go func() { stopped <- h.Run(sctx) }() // the markers' backfill stops with the API
	adminDone := make(chan error, 1)
	if adminLn != nil {
		go func() {
			adminDone <- api.Serve(sctx, adminLn, h.Admin(), logger.With("listener", "admin"), 5*time.Second)
		}()
	} else {
		adminDone <- nil
	}
	s.apiURL = "http://" + ln.Addr().String()
	s.onStop("order api", func() error {
		cancel()
		return errors.Join(<-done, <-adminDone, <-stopped)
	})
	return nil
}

// ensureSchedule creates the reconciliation Schedule and the idempotency cleanup's, or updates them
// (RECONCILE_INTERVAL, IDEMPOTENCY_RETENTION) when a previous run created them: the same calls as the
// starter's at boot.
func (s *stack) ensureSchedule(ctx context.Context) error {
	if err := platform.EnsureScheduleWith(ctx, s.client, platform.ReconcileInterval(s.opts.cfg), platform.ReconcileInput(s.opts.cfg)); err != nil {
		return err
	}
	return platform.EnsureCleanupSchedule(ctx, s.client, workflows.DefaultIdempotencyCleanupInterval, platform.CleanupInput(s.opts.cfg))
}
