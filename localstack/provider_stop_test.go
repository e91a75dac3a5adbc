package main

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga/internal/refunds"
	"github.com/ordersaga/ordersaga/internal/refundsim"
)

// TestLocalStackStopsWithARequestHeldByTheProvider: a blackhole of the refund provider simulator holds a
// request; stopping the stack answers it (503, nothing executed) and stops cleanly, instead of waiting for
// the request and failing the simulator's shutdown.
func TestLocalStackStopsWithARequestHeldByTheProvider(t *testing.T) {
	t.Parallel()
	p := freePorts(t)
	s := startStack(t, p.args(t.TempDir()), storeEnv(t), &p)
	base := fmt.Sprintf("http://%s:%d", localIP, p.provider)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := refundsim.PutFaults(ctx, base, refundsim.Faults{}, time.Hour, nil); err != nil {
		t.Fatal(err)
	}
	provider, err := refunds.NewHTTPProvider(refunds.HTTPConfig{URL: base, Secret: refundsim.LocalStackSecret, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	answered := make(chan error, 1)
	go func() {
		_, err := provider.Send(ctx, refunds.Refund{EventID: "evt-held", OrderID: "o-held", AmountCents: 100, Currency: "EUR"})
		answered <- err
	}()
	eventually(t, 10*time.Second, func() string {
		rep, err := refundsim.Fetch(ctx, base, nil)
		if err != nil || rep.Totals.Blackholed != 1 {
			return fmt.Sprintf("the simulator holds no request yet: totals %+v, %v", rep.Totals, err)
		}
		return ""
	})

	s.stop(t)
	select {
	case err := <-answered:
		if _, refused := refunds.Refused(err); err == nil || refused {
			t.Errorf("the held request was answered %v; want a retryable failure (nothing executed)", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("the held request was still unanswered 5 s after the stack stopped")
	}
}

// TestStartStackMovesOffATakenPort: a port picked for the stack and taken before it listens (another process
// of CI's background run) makes the helper start the stack again on other ports, not fail the test.
func TestStartStackMovesOffATakenPort(t *testing.T) {
	t.Parallel()
	p := freePorts(t)
	// The refund simulator's port: the stack binds it whatever the stores are (the Redis port is not bound when
	// REDIS_ADDR names a real server, as in CI's pass against the real stores).
	taken, err := net.Listen("tcp", fmt.Sprintf("%s:%d", localIP, p.provider))
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	first := p
	s := startStack(t, p.args(t.TempDir()), storeEnv(t), &p)
	if p.provider == first.provider || s.api != fmt.Sprintf("http://%s:%d", localIP, p.http) {
		t.Errorf("the stack answers at %s with ports %+v after %d was taken: not moved", s.api, p, first.provider)
	}
}
