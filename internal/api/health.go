package api

import (
	"context"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/client"
)

// readyTimeout bounds each readiness check.
const readyTimeout = 2 * time.Second

// checkUnreachable is a failed check's whole answer in /readyz.
const checkUnreachable = "unreachable"

// handleHealthz is GET /healthz: the process is up.
func handleHealthz() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
}

// readiness checks Temporal, Redis and the database in parallel: each one's state ("ok" or
// checkUnreachable) and the names of the failed ones, sorted. A failure's error is logged, never answered.
func (s *server) readiness(ctx context.Context) (map[string]string, []string) {
	checks := map[string]func(context.Context) error{
		"temporal": func(ctx context.Context) error {
			_, err := s.Temporal.CheckHealth(ctx, &client.CheckHealthRequest{})
			return err
		},
		"redis":    func(ctx context.Context) error { return s.Redis.Client().Ping(ctx).Err() },
		"database": s.Store.Ping,
	}
	var (
		mu     sync.Mutex
		wg     sync.WaitGroup
		result = map[string]string{}
		failed []string
		errs   []any
	)
	for name, check := range checks {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, readyTimeout)
			defer cancel()
			err := check(ctx)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				// The answer is unauthenticated: a driver's message (hosts, users, SQL) goes to the log only.
				result[name] = checkUnreachable
				failed = append(failed, name)
				errs = append(errs, slog.String(name, err.Error()))
				return
			}
			result[name] = "ok"
		})
	}
	wg.Wait()
	if len(failed) > 0 {
		sort.Strings(failed)
		s.Logger.Warn("not ready", append([]any{"failed", failed}, errs...)...)
	}
	return result, failed
}

// handleReadyz is GET /readyz in detail: Temporal, Redis and the database answer. A failed check is named
// and nothing more (its error is logged). It is on the admin listener (ADMIN_ADDR), or on the API when there
// is none.
func (s *server) handleReadyz() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		result, failed := s.readiness(r.Context())
		if s.degraded(failed) {
			writeJSON(w, http.StatusOK, map[string]any{"status": "degraded", "checks": result})
			return
		}
		if len(failed) > 0 {
			pr := newProblem(kindNotReady, "unreachable: "+strings.Join(failed, ", "))
			pr.Checks = result
			writeProblem(w, pr)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"status": "ready", "checks": result})
	})
}

// handlePublicReadyz is GET /readyz on the API when an admin listener has the detail: ready or not, and
// nothing of what is down (the admin /readyz and the log say it).
func (s *server) handlePublicReadyz() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, failed := s.readiness(r.Context())
		switch {
		case s.degraded(failed):
			writeJSON(w, http.StatusOK, map[string]any{"status": "degraded"})
		case len(failed) > 0:
			writeProblem(w, newProblem(kindNotReady, "not ready"))
		default:
			writeJSON(w, http.StatusOK, map[string]any{"status": "ready"})
		}
	})
}

// degraded reports whether the failed checks are Redis's alone while orders are placed without it
// (RedisDownFallback): the process serves, and a load balancer must keep it.
func (s *server) degraded(failed []string) bool {
	return s.RedisDownFallback && len(failed) == 1 && failed[0] == "redis"
}
