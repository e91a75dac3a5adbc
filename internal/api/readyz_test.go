package api_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.temporal.io/sdk/client"

	"github.com/ordersaga/ordersaga/internal/api"
	"github.com/ordersaga/ordersaga/internal/redisstock"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

// TestReadyzNamesNoHostOrUser: /readyz is unauthenticated, so with every dependency down it names what is
// down and nothing of how it is reached: no host, no user, no driver message (the log has those).
func TestReadyzNamesNoHostOrUser(t *testing.T) {
	t.Parallel()
	const (
		temporalHost = "temporal-leak-host.invalid"
		redisHost    = "redis-leak-host.invalid"
	)
	temporal, err := client.NewLazyClient(client.Options{HostPort: temporalHost + ":7233"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(temporal.Close)
	rdb := redis.NewClient(&redis.Options{Addr: redisHost + ":6379", Username: "redis-leak-user", MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	store, secrets := unreachableStore(t)
	secrets = append(secrets, temporalHost, redisHost, "redis-leak-user", "dial", "lookup", "tcp")

	srv := httptest.NewServer(api.NewServer(api.Deps{
		Logger:   slog.New(slog.DiscardHandler),
		Temporal: temporal, Store: store, Redis: redisstock.New(rdb, "", 0),
		Currency: testCurrency, WebhookSecrets: []string{testSecret}, AdminToken: testAdmin,
	}))
	t.Cleanup(srv.Close)
	r := doRequest(t, http.MethodGet, srv.URL+"/readyz", nil, nil)
	p := r.wantProblem(t, http.StatusServiceUnavailable, "not-ready")
	for _, name := range []string{"temporal", "redis", "database"} {
		if !strings.Contains(p.Detail, name) || p.Checks[name] == "" || p.Checks[name] == "ok" {
			t.Errorf("problem %+v does not name %s as down", p, name)
		}
	}
	body := strings.ToLower(string(r.body))
	for _, s := range secrets {
		if strings.Contains(body, strings.ToLower(s)) {
			t.Errorf("/readyz body carries %q: %s", s, r.body)
		}
	}
}

// unreachableStore returns a database layer whose next connection fails, and what its error would give away:
// on a real MySQL server (MYSQL_DSN) a user that existed when the store was opened and is dropped since, so
// the server answers "Access denied for user '<user>'@'<host>'"; else a closed SQLite store.
func unreachableStore(t *testing.T) (*sqlstore.Store, []string) {
	t.Helper()
	if !testenv.RealMySQL() {
		s := testenv.MustOpenStore(t)
		s.Close()
		return s, []string{"closed", "sql:"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, user, addr, _ := droppedUserStore(ctx, t, testenv.MySQLDatabase(t))
	if err := s.Ping(ctx); err == nil || !strings.Contains(err.Error(), user) {
		t.Fatalf("ping as a dropped user: %v, want an error naming %s", err, user)
	}
	return s, []string{user, addr, "access denied", "1045"}
}
