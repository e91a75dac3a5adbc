package config_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga/internal/config"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestFromEnv_APISettings(t *testing.T) {
	t.Parallel()
	c, err := config.FromEnv(env(map[string]string{
		"HTTP_ADDR": "0.0.0.0:9090", "PAYMENT_WEBHOOK_SECRET": "new, old", "ADMIN_TOKEN": "tok",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.HTTPAddr != "0.0.0.0:9090" || !slices.Equal(c.PaymentWebhookSecrets, []string{"new", "old"}) || c.AdminToken != "tok" {
		t.Errorf("got %+v", c)
	}
	if err := c.RequireAPISecrets(); err != nil {
		t.Errorf("RequireAPISecrets: %v", err)
	}

	d, err := config.FromEnv(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if d.HTTPAddr != "127.0.0.1:8080" {
		t.Errorf("default HTTP_ADDR %q", d.HTTPAddr)
	}
}

func TestFromEnv_ErrorsNameTheVariable(t *testing.T) {
	t.Parallel()
	tests := map[string]map[string]string{
		"HTTP_ADDR":                         {"HTTP_ADDR": "8080"},
		"PAYMENT_WEBHOOK_SECRET":            {"PAYMENT_WEBHOOK_SECRET": "a,,b"},
		"ORDER_PAYMENT_TIMEOUT":             {"ORDER_PAYMENT_TIMEOUT": "soon"},
		"CURRENCY":                          {"CURRENCY": "yuan"},
		"RECONCILE_INTERVAL":                {"RECONCILE_INTERVAL": "10ms"},
		"RECONCILE_GRACE":                   {"RECONCILE_GRACE": "later"},
		"RECONCILE_BATCH":                   {"RECONCILE_BATCH": "0"},
		"RESERVE_DB_FALLBACK":               {"RESERVE_DB_FALLBACK": "maybe"},
		"IDEMPOTENCY_RETENTION":             {"IDEMPOTENCY_RETENTION": "a day"},
		"PLACE_CONCURRENCY":                 {"PLACE_CONCURRENCY": "0"},
		"PLACE_CONCURRENCY=x":               {"PLACE_CONCURRENCY": "lots"},
		"PLACE_CONCURRENCY=big":             {"PLACE_CONCURRENCY": "100001"},
		"PLACE_PER_SKU":                     {"PLACE_PER_SKU": "0"},
		"PLACE_PER_SKU=x":                   {"PLACE_PER_SKU": "a few"},
		"LINE_GRACE":                        {"LINE_GRACE": "soon"},
		"WORKER_CONCURRENCY":                {"WORKER_CONCURRENCY": "0"},
		"WORKER_CONCURRENCY=big":            {"WORKER_CONCURRENCY": "1000000"},
		"ADMIN_ADDR":                        {"ADMIN_ADDR": "9090"},
		"ADMIN_ADDR=HTTP_ADDR":              {"ADMIN_ADDR": "127.0.0.1:8080"},
		"MYSQL_MAX_OPEN_CONNS":              {"MYSQL_MAX_OPEN_CONNS": "0"},
		"MYSQL_MAX_OPEN_CONNS=x":            {"MYSQL_MAX_OPEN_CONNS": "many"},
		"MYSQL_MAX_IDLE_CONNS":              {"MYSQL_MAX_IDLE_CONNS": "-1"},
		"MYSQL_MAX_IDLE_CONNS=>":            {"MYSQL_MAX_OPEN_CONNS": "10", "MYSQL_MAX_IDLE_CONNS": "11"},
		"MYSQL_CONN_MAX_LIFETIME":           {"MYSQL_CONN_MAX_LIFETIME": "100ms"},
		"REDIS_POOL_SIZE":                   {"REDIS_POOL_SIZE": "1e9"},
		"WORKER_LOCAL_ACTIVITY_CONCURRENCY": {"WORKER_LOCAL_ACTIVITY_CONCURRENCY": "0"},
		"TEMPORAL_TLS":                      {"TEMPORAL_TLS": "yes please"},
		"TEMPORAL_TLS=false":                {"TEMPORAL_TLS": "false", "TEMPORAL_API_KEY": "k"},
		"TEMPORAL_TLS_CA":                   {"TEMPORAL_TLS_CA": "/nonexistent/ca.pem"},
		"TEMPORAL_TLS_KEY":                  {"TEMPORAL_TLS_CERT": "/nonexistent/client.pem"},
		"TEMPORAL_TLS_CERT":                 {"TEMPORAL_TLS_KEY": "/nonexistent/client-key.pem"},
	}
	for _, bad := range []string{"0s", "-1h", "24"} {
		tests["IDEMPOTENCY_RETENTION="+bad] = map[string]string{"IDEMPOTENCY_RETENTION": bad}
	}
	for name, vars := range tests {
		name, _, _ = strings.Cut(name, "=")
		if _, err := config.FromEnv(env(vars)); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%v: error %v does not name %s", vars, err, name)
		}
	}
}

func TestRequireAPISecrets_NamesWhatIsMissing(t *testing.T) {
	t.Parallel()
	c, err := config.FromEnv(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	err = c.RequireAPISecrets()
	for _, name := range []string{"PAYMENT_WEBHOOK_SECRET", "ADMIN_TOKEN"} {
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("error %v does not name %s", err, name)
		}
	}
}

func TestFromEnv_ReconciliationAndWorker(t *testing.T) {
	t.Parallel()
	d, err := config.FromEnv(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if !d.ReserveDBFallback || d.ReconcileInterval != 0 || d.ReconcileBatch != 0 || d.ReconcileGrace != 0 || d.MetricsAddr != "" {
		t.Errorf("defaults: %+v (want the fallback on, the workflow's reconciliation defaults, no metrics)", d)
	}
	c, err := config.FromEnv(env(map[string]string{"RECONCILE_INTERVAL": "5m", "RECONCILE_BATCH": "50",
		"RECONCILE_GRACE": "30s", "RESERVE_DB_FALLBACK": "false", "METRICS_ADDR": "127.0.0.1:9464"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.ReconcileInterval != 5*time.Minute || c.ReconcileBatch != 50 || c.ReconcileGrace != 30*time.Second ||
		c.ReserveDBFallback || c.MetricsAddr != "127.0.0.1:9464" {
		t.Errorf("got %+v", c)
	}
}

func TestFromEnv_IdempotencyRetention(t *testing.T) {
	t.Parallel()
	d, err := config.FromEnv(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if d.IdempotencyRetention != 24*time.Hour {
		t.Errorf("default IDEMPOTENCY_RETENTION %s, want 24h", d.IdempotencyRetention)
	}
	c, err := config.FromEnv(env(map[string]string{"IDEMPOTENCY_RETENTION": "90m"}))
	if err != nil || c.IdempotencyRetention != 90*time.Minute {
		t.Errorf("IDEMPOTENCY_RETENTION=90m: %s %v", c.IdempotencyRetention, err)
	}
}

// TestFromEnv_RetentionCoversThePaymentWindow: a key must be remembered while its order may still be open, so
// an IDEMPOTENCY_RETENTION shorter than ORDER_PAYMENT_TIMEOUT plus RECONCILE_GRACE (default 2m) is refused,
// naming both; as long or longer is accepted.
func TestFromEnv_RetentionCoversThePaymentWindow(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		vars map[string]string
		ok   bool
	}{
		{"defaults", nil, true},
		{"retention_shorter_than_the_payment_timeout", map[string]string{"IDEMPOTENCY_RETENTION": "10m"}, false},
		{"retention_within_the_default_grace", map[string]string{"IDEMPOTENCY_RETENTION": "16m"}, false},
		{"retention_is_timeout_plus_default_grace", map[string]string{"IDEMPOTENCY_RETENTION": "17m"}, true},
		{"retention_within_the_grace_set", map[string]string{"IDEMPOTENCY_RETENTION": "17m", "RECONCILE_GRACE": "5m"}, false},
		{"timeout_past_the_default_retention", map[string]string{"ORDER_PAYMENT_TIMEOUT": "24h"}, false},
		{"short_timeout_short_retention", map[string]string{"ORDER_PAYMENT_TIMEOUT": "30s", "IDEMPOTENCY_RETENTION": "3m",
			"RECONCILE_GRACE": "10s"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := config.FromEnv(env(tt.vars))
			if tt.ok {
				if err != nil {
					t.Errorf("%v: %v, want accepted", tt.vars, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "IDEMPOTENCY_RETENTION") || !strings.Contains(err.Error(), "ORDER_PAYMENT_TIMEOUT") {
				t.Errorf("%v: error %v, want one naming IDEMPOTENCY_RETENTION and ORDER_PAYMENT_TIMEOUT", tt.vars, err)
			}
		})
	}
}

func TestFromEnv_PlaceConcurrency(t *testing.T) {
	t.Parallel()
	d, err := config.FromEnv(env(nil))
	if err != nil || d.PlaceConcurrency != 48 {
		t.Errorf("default PLACE_CONCURRENCY %d %v, want 48", d.PlaceConcurrency, err)
	}
	c, err := config.FromEnv(env(map[string]string{"PLACE_CONCURRENCY": "8"}))
	if err != nil || c.PlaceConcurrency != 8 {
		t.Errorf("PLACE_CONCURRENCY=8: %d %v", c.PlaceConcurrency, err)
	}
}

// TestFromEnv_Line: PLACE_PER_SKU and LINE_GRACE are read and checked; PLACE_QUEUE, whose queue the line
// replaced, is refused by name rather than silently meaning nothing.
func TestFromEnv_Line(t *testing.T) {
	t.Parallel()
	d, err := config.FromEnv(env(nil))
	if err != nil || d.PlacePerSKU != 64 || d.LineGrace != 5*time.Second {
		t.Errorf("defaults: PLACE_PER_SKU %d, LINE_GRACE %s (%v), want 64 and 5s", d.PlacePerSKU, d.LineGrace, err)
	}
	c, err := config.FromEnv(env(map[string]string{"PLACE_PER_SKU": "8", "LINE_GRACE": "2s"}))
	if err != nil || c.PlacePerSKU != 8 || c.LineGrace != 2*time.Second {
		t.Errorf("PLACE_PER_SKU=8 LINE_GRACE=2s: %d %s %v", c.PlacePerSKU, c.LineGrace, err)
	}
	for name, v := range map[string]string{"PLACE_PER_SKU": "0", "LINE_GRACE": "10ms", "PLACE_QUEUE": "16"} {
		if _, err := config.FromEnv(env(map[string]string{name: v})); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s=%s: %v, want an error naming %s", name, v, err, name)
		}
	}
}
