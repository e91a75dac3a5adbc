package api_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ordersaga/ordersaga/internal/api"
	"github.com/ordersaga/ordersaga/internal/sagatest"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

// TestAdminListener: with an admin listener (the starter's ADMIN_ADDR), /metrics and the detailed /readyz
// are served there and not on the API, whose /readyz says ready or not and names nothing. Every dependency
// is down here, so both readiness answers are 503.
func TestAdminListener(t *testing.T) {
	t.Parallel()
	h := api.NewServer(api.Deps{
		Logger:   slog.New(slog.DiscardHandler),
		Temporal: sagatest.DeadTemporal(t), Redis: deadRedis(t), Store: testenv.DeadStore(t),
		Registry: prometheus.NewRegistry(), Currency: testCurrency,
		WebhookSecrets: []string{testSecret}, AdminToken: testAdmin,
		SeparateAdmin: true,
	})
	public := httptest.NewServer(h)
	t.Cleanup(public.Close)
	admin := httptest.NewServer(h.Admin())
	t.Cleanup(admin.Close)

	t.Run("public_metrics_is_not_found", func(t *testing.T) {
		t.Parallel()
		doRequest(t, http.MethodGet, public.URL+"/metrics", nil, nil).wantProblem(t, http.StatusNotFound, "not-found")
	})

	t.Run("admin_metrics_has_the_api_series", func(t *testing.T) {
		t.Parallel()
		if r := doRequest(t, http.MethodGet, public.URL+"/healthz", nil, nil); r.status != http.StatusOK {
			t.Fatalf("public healthz: %s", r)
		}
		r := doRequest(t, http.MethodGet, admin.URL+"/metrics", nil, nil)
		if r.status != http.StatusOK || !strings.Contains(string(r.body), `ordersaga_http_requests_total{code="200",route="GET /healthz"}`) {
			t.Errorf("admin /metrics: %d, want 200 with the API's request counts:\n%.2000s", r.status, r.body)
		}
	})

	t.Run("public_readyz_names_nothing", func(t *testing.T) {
		t.Parallel()
		r := doRequest(t, http.MethodGet, public.URL+"/readyz", nil, nil)
		p := r.wantProblem(t, http.StatusServiceUnavailable, "not-ready")
		if len(p.Checks) != 0 {
			t.Errorf("public /readyz carries checks %v", p.Checks)
		}
		body := strings.ToLower(string(r.body))
		for _, name := range []string{"temporal", "redis", "database", "checks", "unreachable"} {
			if strings.Contains(body, name) {
				t.Errorf("public /readyz names %q: %s", name, r.body)
			}
		}
	})

	t.Run("admin_readyz_names_what_is_down", func(t *testing.T) {
		t.Parallel()
		p := doRequest(t, http.MethodGet, admin.URL+"/readyz", nil, nil).wantProblem(t, http.StatusServiceUnavailable, "not-ready")
		for _, name := range []string{"temporal", "redis", "database"} {
			if p.Checks[name] != "unreachable" || !strings.Contains(p.Detail, name) {
				t.Errorf("admin /readyz %+v does not name %s as down", p, name)
			}
		}
	})

	t.Run("admin_serves_no_order_api", func(t *testing.T) {
		t.Parallel()
		doRequest(t, http.MethodGet, admin.URL+"/v1/orders/o-1", nil, nil).wantProblem(t, http.StatusNotFound, "not-found")
	})
}
