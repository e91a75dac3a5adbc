package config_test

import (
	"testing"
	"time"

	"github.com/ordersaga/ordersaga/internal/config"
)

func TestFromEnv_PoolsAndConcurrency(t *testing.T) {
	t.Parallel()
	type pools struct {
		open, idle int
		life       time.Duration
		redis, la  int
	}
	tests := []struct {
		name string
		env  map[string]string
		want pools
	}{
		{"defaults_are_the_old_hard_coded_values", nil, pools{64, 64, 30 * time.Minute, 128, 200}},
		{"each_set", map[string]string{"MYSQL_MAX_OPEN_CONNS": "32", "MYSQL_MAX_IDLE_CONNS": "8",
			"MYSQL_CONN_MAX_LIFETIME": "5m", "REDIS_POOL_SIZE": "256", "WORKER_LOCAL_ACTIVITY_CONCURRENCY": "50"},
			pools{32, 8, 5 * time.Minute, 256, 50}},
		{"fewer_open_connections_take_the_idle_default_down", map[string]string{"MYSQL_MAX_OPEN_CONNS": "16"},
			pools{16, 16, 30 * time.Minute, 128, 200}},
		{"idle_may_be_zero", map[string]string{"MYSQL_MAX_IDLE_CONNS": "0"}, pools{64, 0, 30 * time.Minute, 128, 200}},
		{"local_activities_follow_worker_concurrency", map[string]string{"WORKER_CONCURRENCY": "40"},
			pools{64, 64, 30 * time.Minute, 128, 40}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := config.FromEnv(env(tt.env))
			if err != nil {
				t.Fatal(err)
			}
			got := pools{c.MySQLMaxOpenConns, c.MySQLMaxIdleConns, c.MySQLConnMaxLifetime, c.RedisPoolSize, c.WorkerLocalActivityConcurrency}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestFromEnv_AdminAddr(t *testing.T) {
	t.Parallel()
	d, err := config.FromEnv(env(nil))
	if err != nil || d.AdminAddr != "" {
		t.Fatalf("default ADMIN_ADDR %q (%v), want unset", d.AdminAddr, err)
	}
	c, err := config.FromEnv(env(map[string]string{"ADMIN_ADDR": "127.0.0.1:9090"}))
	if err != nil || c.AdminAddr != "127.0.0.1:9090" {
		t.Errorf("ADMIN_ADDR=127.0.0.1:9090: %q %v", c.AdminAddr, err)
	}
}

// TestReaders_EveryVariableHasItsProcess: each variable FromEnv reads says which process uses it, and the
// table names no variable FromEnv does not read.
func TestReaders_EveryVariableHasItsProcess(t *testing.T) {
	t.Parallel()
	read := map[string]bool{}
	if _, err := config.FromEnv(func(k string) string { read[k] = true; return "" }); err != nil {
		t.Fatal(err)
	}
	for name := range read {
		if len(config.Readers(name)) == 0 {
			t.Errorf("%s: FromEnv reads it but no process is said to use it (variables.go)", name)
		}
	}
	for _, name := range config.Variables() {
		if !read[name] {
			t.Errorf("%s: in the table of variables.go, but FromEnv does not read it", name)
		}
	}
	if !config.ReadBy(config.Worker, "RESERVE_DB_FALLBACK") || !config.ReadBy(config.Starter, "RESERVE_DB_FALLBACK") {
		t.Error("RESERVE_DB_FALLBACK: want both (the worker's reserve, the API's placement)")
	}
	for _, name := range []string{"WORKER_LOCAL_ACTIVITY_CONCURRENCY", "METRICS_ADDR"} {
		if !config.ReadBy(config.Worker, name) || config.ReadBy(config.Starter, name) {
			t.Errorf("%s: want the worker's alone", name)
		}
	}
	for _, name := range []string{"ORDER_PAYMENT_TIMEOUT", "RECONCILE_GRACE", "ADMIN_ADDR", "CALLER_IDENTITY", "CALLER_TOKEN_SECRET"} {
		if config.ReadBy(config.Worker, name) || !config.ReadBy(config.Starter, name) {
			t.Errorf("%s: want the starter's alone", name)
		}
	}
}
