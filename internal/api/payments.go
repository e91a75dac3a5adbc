package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/orderclient"
	"github.com/ordersaga/ordersaga/internal/webhook"
	"github.com/ordersaga/ordersaga/workflows"
)

// PaymentEvent is the body of POST /v1/payments/webhook (declared in the root package, which the tools share).
type PaymentEvent = ordersaga.PaymentEvent

// PaymentSucceeded is the only payment status the webhook acts on.
const PaymentSucceeded = ordersaga.PaymentSucceeded

// PaymentAnswer is the webhook's 200 body.
type PaymentAnswer = ordersaga.PaymentAnswer

// validatePayment names the first field of the event that breaks ordersaga.CheckPayment, the one check of a
// payment's fields (the amount's bound included) for every way a payment comes in.
func validatePayment(e PaymentEvent) *fieldError {
	if p := ordersaga.CheckPayment(e.EventID, e.OrderID, e.AmountCents, e.Currency); p != nil {
		return &fieldError{p.Field, p.Want}
	}
	return nil
}

// handlePaymentWebhook is POST /v1/payments/webhook: verify the signature (401, nothing recorded), answer a
// known event as a duplicate, else apply the payment through the order's workflow; a payment for an order
// the workflow can no longer take is refunded once per event.
func (s *server) handlePaymentWebhook() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, prob := readBody(w, r)
		if prob != nil {
			writeProblem(w, prob)
			return
		}
		if err := webhook.Verify(r.Header.Get(webhook.Header), body, s.WebhookSecrets, s.Now(), webhook.Tolerance); err != nil {
			s.Logger.Warn("payment webhook refused", "reason", err)
			s.metrics.payments.WithLabelValues("invalid_signature").Inc()
			writeProblem(w, newProblem(kindInvalidSignature, err.Error()))
			return
		}
		var ev PaymentEvent
		if err := decodeStrict(body, &ev); err != nil {
			writeProblem(w, newProblem(kindInvalidBody, err.Error()))
			return
		}
		if ferr := validatePayment(ev); ferr != nil {
			pr := newProblem(kindInvalidField, ferr.Error())
			pr.Field = ferr.Field
			writeProblem(w, pr)
			return
		}
		if ev.Status != PaymentSucceeded {
			pr := newProblem(kindUnsupportedPayment, fmt.Sprintf("status %q: only %q payments are handled", ev.Status, PaymentSucceeded))
			pr.Field = "status"
			writeProblem(w, pr)
			return
		}
		result, err := s.pay(r.Context(), ev)
		if err != nil {
			s.Logger.Error("payment webhook", "event_id", ev.EventID, "order_id", ev.OrderID, "error", err)
			s.metrics.payments.WithLabelValues("error").Inc()
			writeProblem(w, newProblem(kindUnavailable, "the payment could not be handled right now; deliver it again"))
			return
		}
		s.metrics.payments.WithLabelValues(string(result)).Inc()
		s.Logger.Info("payment", "event_id", ev.EventID, "order_id", ev.OrderID, "result", string(result))
		writeJSON(w, http.StatusOK, PaymentAnswer{Result: result, OrderID: ev.OrderID})
	})
}

// pay applies one payment event and returns what became of it.
func (s *server) pay(ctx context.Context, ev PaymentEvent) (ordersaga.PaymentResult, error) {
	if _, err := s.Store.Payment(ctx, ev.EventID); err == nil {
		return ordersaga.PaymentDuplicate, nil
	} else if !errors.Is(err, ordersaga.ErrNotFound) {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, s.UpdateTimeout)
	defer cancel()
	result, err := orderclient.Pay(ctx, s.Temporal, ev.OrderID, workflows.PaymentSignal{
		EventID: ev.EventID, AmountCents: ev.AmountCents, Currency: ev.Currency,
	})
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		// The order's workflow is closed ("workflow execution already completed") or unknown to Temporal.
		return s.refund(ctx, ev, notFound.Error())
	}
	return result, err
}

// refund records the payment as refunded through RefundWorkflow, whose ID is the event's: deliveries of one
// event, however many and however concurrent, make one refund.
func (s *server) refund(ctx context.Context, ev PaymentEvent, why string) (ordersaga.PaymentResult, error) {
	id := workflows.RefundWorkflowID(ev.EventID)
	run, err := s.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       id,
		TaskQueue:                workflows.TaskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
	}, workflows.RefundWorkflow, ordersaga.PaymentRecord{
		EventID: ev.EventID, OrderID: ev.OrderID, AmountCents: ev.AmountCents, Currency: ev.Currency,
		Detail: "order closed or unknown to Temporal: " + why, // the store cuts it to its column
	})
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &started) {
		run, err = s.Temporal.GetWorkflow(ctx, id, ""), nil
	}
	if err != nil {
		return "", fmt.Errorf("refund %s: %w", ev.EventID, err)
	}
	var rec ordersaga.PaymentRecord
	if err := run.Get(ctx, &rec); err != nil {
		return "", fmt.Errorf("refund %s: %w", ev.EventID, err)
	}
	if rec.Result != ordersaga.PaymentRefunded {
		// The event was recorded otherwise before (applied or rejected): this delivery is a duplicate.
		return ordersaga.PaymentDuplicate, nil
	}
	return ordersaga.PaymentRefunded, nil
}
