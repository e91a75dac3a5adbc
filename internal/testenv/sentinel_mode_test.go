package testenv

import (
	"strings"
	"testing"
)

// TestRedisModeOf: each variable alone picks its mode; a cluster and Sentinel together, or REDIS_SENTINEL set
// to anything but 1, is an error naming the variables.
func TestRedisModeOf(t *testing.T) {
	for _, c := range []struct {
		name string
		env  map[string]string
		want redisMode
		errs []string // what the error names; none for no error
	}{
		{"nothing: miniredis", nil, redisMini, nil},
		{"REDIS_ADDR: one server", map[string]string{"REDIS_ADDR": "127.0.0.1:6379"}, redisServer, nil},
		{"REDIS_CLUSTER: a cluster", map[string]string{"REDIS_CLUSTER": "1", "REDIS_ADDR": "x:1"}, redisCluster, nil},
		{"REDIS_CLUSTER_ADDRS: a cluster", map[string]string{"REDIS_CLUSTER_ADDRS": "a:1,b:2"}, redisCluster, nil},
		{"REDIS_SENTINEL: sentinel", map[string]string{"REDIS_SENTINEL": "1", "REDIS_ADDR": "x:1"}, redisSentinel, nil},
		{"cluster and sentinel: error", map[string]string{"REDIS_CLUSTER": "1", "REDIS_SENTINEL": "1"}, 0,
			[]string{"REDIS_CLUSTER", "REDIS_SENTINEL"}},
		{"cluster seeds and sentinel: error", map[string]string{"REDIS_CLUSTER_ADDRS": "a:1", "REDIS_SENTINEL": "1"}, 0,
			[]string{"REDIS_CLUSTER_ADDRS", "REDIS_SENTINEL"}},
		{"REDIS_SENTINEL=yes: error", map[string]string{"REDIS_SENTINEL": "yes"}, 0, []string{"REDIS_SENTINEL", `"yes"`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := redisModeOf(func(k string) string { return c.env[k] })
			if len(c.errs) == 0 {
				if err != nil || got != c.want {
					t.Fatalf("redisModeOf(%v) = %v, %v; want %v", c.env, got, err, c.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("redisModeOf(%v) = %v, want an error", c.env, got)
			}
			for _, name := range c.errs {
				if !strings.Contains(err.Error(), name) {
					t.Errorf("error %q does not name %s", err, name)
				}
			}
		})
	}
}
