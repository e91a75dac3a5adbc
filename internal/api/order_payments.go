package api

import (
	"net/http"

	"github.com/ordersaga/ordersaga"
)

// handleOrderPayments is GET /v1/orders/{id}/payments: every payment event of the order and what became of
// its refund (pending, sent with the provider's reference, or refused). 404 for an order neither Temporal
// nor the database knows and that has no payment, and for another user's order.
func (s *server) handleOrderPayments() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		_, known, ok := s.callersOrder(w, r)
		if !ok {
			return
		}
		rows, err := s.Store.PaymentsOfOrder(r.Context(), id)
		if err != nil {
			s.Logger.Warn("read payments", "order_id", id, "error", err)
			writeProblem(w, newProblem(kindUnavailable, "the payments cannot be read right now"))
			return
		}
		if !known && len(rows) == 0 {
			writeOrderNotFound(w, id)
			return
		}
		body := ordersaga.OrderPayments{OrderID: id, Payments: make([]ordersaga.PaymentView, len(rows))}
		for i, e := range rows {
			body.Payments[i] = e.View()
		}
		writeJSON(w, http.StatusOK, body)
	})
}
