package api

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/orderclient"
	"github.com/ordersaga/ordersaga/internal/reconcile"
	"github.com/ordersaga/ordersaga/workflows"
)

// queryTimeout bounds a status query (it needs a worker; without one the database answers).
const queryTimeout = 5 * time.Second

// handleGetOrder is GET /v1/orders/{id}: the workflow's query while it runs, the database once it is closed
// (or gone from Temporal); 404 when neither knows the order.
func (s *server) handleGetOrder() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o, known, ok := s.callersOrder(w, r)
		switch {
		case !ok:
		case !known:
			writeOrderNotFound(w, r.PathValue("id"))
		default:
			writeJSON(w, http.StatusOK, o)
		}
	})
}

// callersOrder is the start of every read of one order ({id} in the path): the caller, the ID's shape, and
// the order. ok false: the answer is written (401, 404, or 503 when the order cannot be read). known false:
// neither Temporal nor the database knows the order, and no caller is named. A named caller is answered 404
// for an order that is not theirs, or that no one knows: its existence is not the caller's to learn.
func (s *server) callersOrder(w http.ResponseWriter, r *http.Request) (o ordersaga.Order, known, ok bool) {
	id := r.PathValue("id")
	caller, ok := s.caller(w, r)
	if !ok {
		return o, false, false
	}
	if !validOrderID(id) {
		writeOrderNotFound(w, "")
		return o, false, false
	}
	o, err := s.readOrder(r.Context(), id)
	switch {
	case err != nil && !errors.Is(err, ordersaga.ErrNotFound):
		s.Logger.Warn("read order", "order_id", id, "error", err)
		writeProblem(w, newProblem(kindUnavailable, "the order cannot be read right now"))
		return o, false, false
	case caller != "" && (err != nil || o.UserID != caller):
		writeOrderNotFound(w, id)
		return o, false, false
	}
	return o, err == nil, true
}

// readOrder reads an order; ordersaga.ErrNotFound when neither Temporal nor the database knows it.
func (s *server) readOrder(ctx context.Context, id string) (ordersaga.Order, error) {
	wfID := workflows.OrderWorkflowID(id)
	desc, derr := s.Temporal.DescribeWorkflowExecution(ctx, wfID, "")
	var notFound *serviceerror.NotFound
	running := derr == nil && desc.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
	if running {
		qctx, cancel := context.WithTimeout(ctx, queryTimeout)
		o, err := orderclient.Status(qctx, s.Temporal, id)
		cancel()
		if err == nil {
			return o, nil
		}
		s.Logger.Warn("order status query failed; reading the database", "order_id", id, "error", err)
	}
	rec, err := s.Store.Order(ctx, id)
	if err == nil {
		return rec.View(), nil
	}
	if !errors.Is(err, ordersaga.ErrNotFound) {
		return ordersaga.Order{}, err
	}
	switch {
	case derr == nil && !running:
		// Closed but not in the database (it never is for long): its result is the order.
		var o ordersaga.Order
		if gerr := s.Temporal.GetWorkflow(ctx, wfID, "").Get(ctx, &o); gerr == nil {
			return o, nil
		}
		return ordersaga.Order{}, err
	case derr != nil && !errors.As(derr, &notFound):
		return ordersaga.Order{}, errors.Join(derr, err) // Temporal unreachable: unknown is not known
	case running:
		return ordersaga.Order{}, errors.New("order running but its status query failed and the database has no record yet")
	}
	return ordersaga.Order{}, err
}

// handleCancelOrder is POST /v1/orders/{id}/cancel (no body): 200 with the order CANCELLED and compensated,
// or unchanged when it was already closed unpaid; 409 when it is PAID; 404 when unknown.
func (s *server) handleCancelOrder() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		body, prob := readBody(w, r)
		if prob != nil {
			writeProblem(w, prob)
			return
		}
		if len(bytes.TrimSpace(body)) > 0 {
			var none struct{}
			if err := decodeStrict(body, &none); err != nil {
				writeProblem(w, newProblem(kindInvalidBody, "cancel takes no body: "+err.Error()))
				return
			}
		}
		caller, ok := s.caller(w, r)
		if !ok {
			return
		}
		if !validOrderID(id) {
			writeOrderNotFound(w, "")
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), s.UpdateTimeout)
		defer cancel()
		if caller != "" {
			// Only the order's own user may cancel it; another user's order is answered as unknown.
			o, err := s.readOrder(ctx, id)
			switch {
			case errors.Is(err, ordersaga.ErrNotFound), err == nil && o.UserID != caller:
				writeOrderNotFound(w, id)
				return
			case err != nil:
				s.Logger.Warn("read order before cancel", "order_id", id, "error", err)
				writeProblem(w, newProblem(kindUnavailable, "the order cannot be read right now; retrying is safe"))
				return
			}
		}
		o, err := orderclient.Cancel(ctx, s.Temporal, id, "")
		var notFound *serviceerror.NotFound
		if errors.As(err, &notFound) {
			o, err = s.cancelGone(ctx, id)
			if errors.Is(err, ordersaga.ErrNotFound) {
				writeOrderNotFound(w, id)
				return
			}
		}
		if err != nil {
			s.Logger.Warn("cancel order", "order_id", id, "error", err)
			writeProblem(w, newProblem(kindUnavailable, "the order could not be cancelled right now; retry"))
			return
		}
		if o.Status == ordersaga.StatusPaid {
			pr := newProblem(kindAlreadyPaid, "order "+id+" is paid and can no longer be cancelled")
			pr.OrderID = id
			writeProblem(w, pr)
			return
		}
		writeJSON(w, http.StatusOK, o)
	})
}

// cancelGone cancels an order whose workflow is closed or gone from Temporal: the database has the final
// word. An order it still holds open is closed and its stock given back on both sides, the way
// reconciliation closes a leaked order; a final order is answered as it stands (its release, if one was
// lost, is not sent again: reconciliation has since counted those units in Redis's counter).
func (s *server) cancelGone(ctx context.Context, id string) (ordersaga.Order, error) {
	rec, err := s.Store.Order(ctx, id)
	if err != nil {
		return ordersaga.Order{}, err
	}
	if rec.Status.Final() {
		return rec.View(), nil
	}
	rec, _, err = reconcile.CloseGone(ctx, s.Store, s.Redis, id, ordersaga.StatusCancelled,
		"cancelled; the order's workflow was gone")
	if err != nil {
		return ordersaga.Order{}, err
	}
	return rec.View(), nil
}

// writeOrderNotFound answers 404 for the order id ("" for an ID that cannot name an order, which is not echoed).
func writeOrderNotFound(w http.ResponseWriter, id string) {
	if id == "" {
		writeProblem(w, newProblem(kindOrderNotFound, "no such order"))
		return
	}
	pr := newProblem(kindOrderNotFound, "no order "+id)
	pr.OrderID = id
	writeProblem(w, pr)
}
