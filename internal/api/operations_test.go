package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/ordersaga/ordersaga/internal/api"
	"github.com/ordersaga/ordersaga/internal/sagatest"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

// TestOperations covers /healthz, /readyz, /metrics and the answers of routes that do not exist.
func TestOperations(t *testing.T) {
	t.Parallel()
	e := newAPI(t)

	t.Run("healthz", func(t *testing.T) {
		t.Parallel()
		if r := e.do(http.MethodGet, "/healthz", nil, nil); r.status != http.StatusOK {
			t.Errorf("got %s", r)
		}
	})

	t.Run("readyz_when_everything_answers", func(t *testing.T) {
		t.Parallel()
		r := e.do(http.MethodGet, "/readyz", nil, nil)
		if r.status != http.StatusOK || !strings.Contains(string(r.body), `"temporal":"ok"`) ||
			!strings.Contains(string(r.body), `"redis":"ok"`) || !strings.Contains(string(r.body), `"database":"ok"`) {
			t.Errorf("got %s", r)
		}
	})

	t.Run("readyz_names_what_is_down", func(t *testing.T) {
		t.Parallel()
		down := serveAPI(t, e.Env, func(d *api.Deps) {
			d.Temporal, d.Redis, d.Store = sagatest.DeadTemporal(t), deadRedis(t), testenv.DeadStore(t)
		})
		p := down.do(http.MethodGet, "/readyz", nil, nil).wantProblem(t, http.StatusServiceUnavailable, "not-ready")
		for _, name := range []string{"temporal", "redis", "database"} {
			if !strings.Contains(p.Detail, name) || p.Checks[name] == "" || p.Checks[name] == "ok" {
				t.Errorf("problem %+v does not name %s as down", p, name)
			}
		}
		if r := down.do(http.MethodGet, "/healthz", nil, nil); r.status != http.StatusOK {
			t.Errorf("healthz with everything down: %s, want 200 (the process is up)", r)
		}
	})

	t.Run("unknown_route_and_method_are_problems", func(t *testing.T) {
		t.Parallel()
		e.do(http.MethodGet, "/v1/nothing", nil, nil).wantProblem(t, http.StatusNotFound, "not-found")
		r := e.do(http.MethodDelete, "/v1/orders/o-1", nil, nil)
		r.wantProblem(t, http.StatusMethodNotAllowed, "method-not-allowed")
		if allow := r.header.Get("Allow"); !strings.Contains(allow, "GET") {
			t.Errorf("Allow %q", allow)
		}
	})

	t.Run("metrics_count_requests_by_route_and_status", func(t *testing.T) {
		t.Parallel()
		m := serveAPI(t, e.Env)
		m.do(http.MethodGet, "/healthz", nil, nil)
		m.place("k", `{}`)
		r := m.do(http.MethodGet, "/metrics", nil, nil)
		if r.status != http.StatusOK {
			t.Fatalf("metrics: %s", r)
		}
		for _, want := range []string{
			`ordersaga_http_requests_total{code="200",route="GET /healthz"} 1`,
			`ordersaga_http_requests_total{code="400",route="POST /v1/orders"} 1`,
			`ordersaga_http_request_duration_seconds_bucket{route="GET /healthz"`,
		} {
			if !strings.Contains(string(r.body), want) {
				t.Errorf("metrics lack %s", want)
			}
		}
	})
}
