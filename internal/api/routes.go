package api

import "net/http"

// addRoutes lists the whole API (docs/http-api.md). With an admin listener (Deps.SeparateAdmin) /metrics
// and the detailed /readyz move to addAdminRoutes, and /readyz here says only ready or not.
func addRoutes(mux *http.ServeMux, s *server) {
	mux.Handle("POST /v1/orders", s.handlePlaceOrder())
	mux.Handle("GET /v1/orders/{id}", s.handleGetOrder())
	mux.Handle("GET /v1/orders/{id}/payments", s.handleOrderPayments())
	mux.Handle("POST /v1/orders/{id}/cancel", s.handleCancelOrder())
	mux.Handle("POST /v1/payments/webhook", s.handlePaymentWebhook())
	mux.Handle("GET /v1/inventory/{sku}", s.handleGetInventory())
	mux.Handle("PUT /v1/inventory/{sku}", s.requireAdmin(s.handlePutInventory()))
	mux.Handle("GET /healthz", handleHealthz())
	if s.SeparateAdmin {
		mux.Handle("GET /readyz", s.handlePublicReadyz())
		return
	}
	mux.Handle("GET /readyz", s.handleReadyz())
	mux.Handle("GET /metrics", s.metrics.handler(s.Registry))
}

// addAdminRoutes lists the admin listener's routes (ADMIN_ADDR): for operators and Prometheus, not clients.
func addAdminRoutes(mux *http.ServeMux, s *server) {
	mux.Handle("GET /healthz", handleHealthz())
	mux.Handle("GET /readyz", s.handleReadyz())
	mux.Handle("GET /metrics", s.metrics.handler(s.Registry))
}
