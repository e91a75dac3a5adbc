package reconcile_test

import (
	"context"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"
)

// quietRedis drops go-redis's own log lines: the outage tests stop Redis on purpose, and every failed dial
// would otherwise print one.
type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}

func TestMain(m *testing.M) {
	redis.SetLogger(quietRedis{})
	os.Exit(m.Run())
}
