package platform

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestRedisLog_OneLineOfAKindPerInterval: a thousand failed dials within the interval are one warning in the
// process's format; the next one after the interval says how many were left out; another kind of line is
// written at once.
func TestRedisLog_OneLineOfAKindPerInterval(t *testing.T) {
	var out strings.Builder
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	l := newRedisLog(slog.New(slog.NewTextHandler(&out, nil)), 10*time.Second, func() time.Time { return now })
	ctx := context.Background()
	const dial = "redis: connection pool: failed to dial after %d attempts: %v"
	for i := range 1000 {
		l.Printf(ctx, dial, 5, "connection refused")
		if i == 500 {
			l.Printf(ctx, "redis: connection pool: conn[%d] rejected by hook, returning to pool", 7)
		}
	}
	now = now.Add(11 * time.Second)
	l.Printf(ctx, dial, 5, "connection refused")

	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3 (the first dial failure, the other kind, the next dial failure):\n%s", len(lines), out.String())
	}
	for i, want := range []string{
		`level=WARN msg="connection pool: failed to dial after 5 attempts: connection refused" source=go-redis`,
		`msg="connection pool: conn[7] rejected by hook, returning to pool" source=go-redis`,
		`msg="connection pool: failed to dial after 5 attempts: connection refused" source=go-redis repeated=999`,
	} {
		if !strings.Contains(lines[i], want) {
			t.Errorf("line %d: %s\nwant it to contain %s", i, lines[i], want)
		}
	}
}
