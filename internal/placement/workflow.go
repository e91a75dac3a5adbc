package placement

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/api/serviceerror"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/orderclient"
	"github.com/ordersaga/ordersaga/workflows"
)

// errStillDeciding means the reservation was not decided within PlaceTimeout, or Temporal asked to back off
// (too many updates in flight on the workflow): a retry with the same key gets the answer.
var errStillDeciding = errors.New("reservation still being decided")

// place starts the order's workflow, or attaches to it, and waits for the reservation. Concurrent requests
// for one order ID in this process share one Update-with-Start (Temporal bounds the updates in flight per
// workflow, so fifty at once would be refused). When the workflow of the order ID is already closed (a request
// that placed it died before keeping its answer, or it was rejected and the key has moved on meanwhile), the
// reservation is read from its result. The admission's units are counted until the reservation is decided
// (or the shared call gives up after PlaceTimeout), even when this request stops waiting before.
func (p *placement) place(ctx context.Context, orderID string, adm *admitted) (workflows.Reservation, error) {
	s := p.s
	in := workflows.OrderInput{
		OrderID: orderID, UserID: p.req.UserID, Currency: s.cfg.Currency, Lines: p.req.Lines,
		PaymentTimeout: s.cfg.PaymentTimeout, Shards: p.shards,
	}
	// The shared call outlives a request that gives up: the others may still wait for it.
	shared := context.WithoutCancel(ctx)
	ch := s.placing.DoChan(orderID, func() (any, error) {
		ctx, cancel := context.WithTimeout(shared, s.cfg.PlaceTimeout)
		defer cancel()
		if !s.takeSlot(ctx) {
			return workflows.Reservation{}, fmt.Errorf("%w: none of the %d placements in flight ended within %s", errStillDeciding, cap(s.slots), s.cfg.PlaceTimeout)
		}
		defer s.freeSlot()
		if s.cfg.Places != nil {
			s.cfg.Places.Inc()
		}
		res, err := orderclient.Place(ctx, s.cfg.Temporal, in)
		var started *serviceerror.WorkflowExecutionAlreadyStarted
		switch {
		case errors.As(err, &started):
			return s.closedReservation(ctx, orderID)
		case err != nil && (ctx.Err() != nil || orderclient.Undecided(err)):
			return res, fmt.Errorf("%w: %w", errStillDeciding, err)
		}
		return res, err
	})
	select {
	case r := <-ch:
		adm.Done(shared)
		res, _ := r.Val.(workflows.Reservation)
		return res, r.Err
	case <-ctx.Done():
		go func() {
			<-ch
			adm.Done(shared)
		}()
		return workflows.Reservation{}, fmt.Errorf("%w: %w", errStillDeciding, ctx.Err())
	}
}

// closedReservation rebuilds the reservation answer of an order whose workflow is closed: from the
// workflow's result, else from the database.
func (s *Service) closedReservation(ctx context.Context, orderID string) (workflows.Reservation, error) {
	var o ordersaga.Order
	err := s.cfg.Temporal.GetWorkflow(ctx, workflows.OrderWorkflowID(orderID), "").Get(ctx, &o)
	if err != nil {
		rec, derr := s.cfg.Store.Order(ctx, orderID)
		if derr != nil {
			return workflows.Reservation{}, fmt.Errorf("closed order %s: %w", orderID, errors.Join(err, derr))
		}
		o = rec.View()
	}
	return reservationOf(o), nil
}

// reservationOf rebuilds the reservation answer of a closed order from its closed_reason (the workflow wrote
// it with ordersaga.RejectReason).
func reservationOf(o ordersaga.Order) workflows.Reservation {
	res := workflows.Reservation{Order: o}
	if o.Status != ordersaga.StatusRejected {
		return res
	}
	if r, ok := ordersaga.ParseRejectReason(o.ClosedReason); ok {
		switch r.Kind {
		case ordersaga.RejectSoldOut:
			res.SoldOutSKU = r.SKU
		case ordersaga.RejectUnknownSKU:
			res.UnknownSKU = r.SKU
		case ordersaga.RejectLimit:
			res.LimitExceeded = &ordersaga.LimitExceededError{SKU: r.SKU, Limit: r.Limit, Held: r.Held}
		}
	}
	return res
}
