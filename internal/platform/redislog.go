package platform

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisLogEvery is how often one kind of go-redis's own log lines (one format: "failed to dial after %d
// attempts: %v", ...) reaches the process log; the lines in between are counted, not written.
const RedisLogEvery = 10 * time.Second

// RouteRedisLogs sends go-redis's own log lines (a failed dial of each pool connection while a server or a
// cluster node is down, which go-redis prints to stderr without a level, one per connection) to the process
// logger as warnings, each kind at most once per RedisLogEvery with the count of the ones left out ("repeated").
// A failover or a restart of Redis is then a few lines in the process's format, not thousands in another.
// go-redis has one logger per process: the process's main calls this once.
func RouteRedisLogs(logger *slog.Logger) {
	redis.SetLogger(newRedisLog(logger, RedisLogEvery, time.Now))
}

type redisLog struct {
	log   *slog.Logger
	every time.Duration
	now   func() time.Time
	mu    sync.Mutex
	last  map[string]time.Time // format -> when a line of it was last written
	left  map[string]int       // format -> lines left out since
}

func newRedisLog(logger *slog.Logger, every time.Duration, now func() time.Time) *redisLog {
	return &redisLog{log: logger, every: every, now: now, last: map[string]time.Time{}, left: map[string]int{}}
}

func (l *redisLog) Printf(ctx context.Context, format string, args ...any) {
	l.mu.Lock()
	now := l.now()
	if t, ok := l.last[format]; ok && now.Sub(t) < l.every {
		l.left[format]++
		l.mu.Unlock()
		return
	}
	repeated := l.left[format]
	l.last[format] = now
	delete(l.left, format)
	l.mu.Unlock()
	attrs := []any{"source", "go-redis"}
	if repeated > 0 {
		attrs = append(attrs, "repeated", repeated)
	}
	l.log.WarnContext(ctx, strings.TrimPrefix(fmt.Sprintf(format, args...), "redis: "), attrs...)
}
