package main

import (
	"context"

	"github.com/ordersaga/ordersaga/internal/api"
	"github.com/ordersaga/ordersaga/internal/apiprocess"
	"github.com/ordersaga/ordersaga/internal/platform"
	"github.com/ordersaga/ordersaga/internal/redisstock"
	"github.com/ordersaga/ordersaga/workflows"
)

// startAPI serves the order API on --http-addr: the same handler and graceful shutdown as the starter.
func (s *stack) startAPI(ctx context.Context, rs *redisstock.Store) error {
	cfg := s.opts.cfg
	ln, err := listen(cfg.HTTPAddr, flagHTTPAddr)
	if err != nil {
		return err
	}
	logger := s.log.With("component", "api")
	srv, err := apiprocess.Open(cfg, api.Deps{Logger: logger, Temporal: s.client, Store: s.store, Redis: rs, Registry: s.registry}, ln)
	if err != nil {
		return err
	}
	// Serve stops when its context is done; stop cancels it, after which Serve drains what is in flight.
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan error, 1)
	go func() { done <- srv.Serve(sctx, apiDrain) }()
	s.apiURL = "http://" + srv.Addr().String()
	s.onStop("order api", func() error {
		cancel()
		return <-done
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
