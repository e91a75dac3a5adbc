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

// handleReadyz is GET /readyz: Temporal, Redis and the database answer (checked in parallel). It is
// unauthenticated, so a failed check is named and nothing more; its error is logged. Redis alone unreachable
// while orders are placed without it (RedisDownFallback) is 200 "degraded".
func (s *server) handleReadyz() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
				ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
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
		if len(failed) == 1 && failed[0] == "redis" && s.RedisDownFallback {
			// Orders are placed through the database alone: a load balancer must keep this process.
			s.Logger.Warn("degraded: redis unreachable, orders placed through the database alone", errs...)
			writeJSON(w, http.StatusOK, map[string]any{"status": "degraded", "checks": result})
			return
		}
		if len(failed) > 0 {
			sort.Strings(failed)
			s.Logger.Warn("not ready", append([]any{"failed", failed}, errs...)...)
			pr := newProblem(kindNotReady, "unreachable: "+strings.Join(failed, ", "))
			pr.Checks = result
			writeProblem(w, pr)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"status": "ready", "checks": result})
	})
}
