package main

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga/internal/config"
	"github.com/ordersaga/ordersaga/internal/platform"
	"github.com/ordersaga/ordersaga/internal/redislab"
	"github.com/ordersaga/ordersaga/internal/redisstock"
)

// TestCluster runs the cluster scenario on the real services: the stack on a Redis Cluster of its own, the
// master of the first SKU's slot SIGKILLed under load and its replica promoted, then the same with the
// replica cut off first so that the master's last writes are lost; every invariant counter must be 0 after
// the settle, and both faults must have been seen (the promotion, and the probe key missing after it).
func TestCluster(t *testing.T) {
	needServices(t)
	if skip, err := clusterPreflight(os.Getenv, exec.LookPath); err != nil {
		t.Fatal(err)
	} else if skip != "" {
		t.Skip(skip)
	}
	sc, _ := defaultScenario("cluster")
	sc.Dir = t.TempDir()
	res := runChecked(t, sc)
	for _, kind := range []string{"redis_master_kill", "redis_lost_writes"} {
		if n := res.counters["faults_"+kind]; n != 1 {
			t.Errorf("faults_%s = %d (missed_%s = %d), want 1: the run must see the failover", kind, n, kind, res.counters["missed_"+kind])
		}
	}
}

// clusterPreflight: the cluster run starts a Redis Cluster of its own with redis-server and redis-cli. A
// missing one skips it, or fails it under CI=true (skipped there, the failover would go untested while CI
// stays green).
func clusterPreflight(getenv func(string) string, lookPath func(string) (string, error)) (skip string, err error) {
	for _, bin := range []string{"redis-server", "redis-cli"} {
		if _, lerr := lookPath(bin); lerr != nil {
			msg := bin + " is not installed (apt-get install -y redis-server): the cluster run starts a Redis Cluster of its own"
			if getenv("CI") == "true" {
				return "", errors.New("CI=true: " + msg)
			}
			return msg, nil
		}
	}
	return "", nil
}

// TestClusterPreflight: a missing redis-cli skips the cluster run, and fails it under CI=true.
func TestClusterPreflight(t *testing.T) {
	t.Parallel()
	noCLI := func(bin string) (string, error) {
		if bin == "redis-cli" {
			return "", exec.ErrNotFound
		}
		return "/usr/bin/" + bin, nil
	}
	if skip, err := clusterPreflight(func(string) string { return "" }, noCLI); err != nil || !strings.Contains(skip, "redis-cli") {
		t.Errorf("without redis-cli: skip %q, err %v; want a skip naming redis-cli", skip, err)
	}
	ci := func(k string) string { return map[string]string{"CI": "true"}[k] }
	if _, err := clusterPreflight(ci, noCLI); err == nil || !strings.Contains(err.Error(), "CI=true") || !strings.Contains(err.Error(), "redis-cli") {
		t.Errorf("without redis-cli under CI=true: err %v, want one naming CI=true and redis-cli", err)
	}
	if skip, err := clusterPreflight(ci, func(bin string) (string, error) { return "/usr/bin/" + bin, nil }); skip != "" || err != nil {
		t.Errorf("both installed: skip %q, err %v; want the run", skip, err)
	}
}

// TestClusterEnvironment: on a cluster every process gets REDIS_CLUSTER_ADDRS and no REDIS_ADDR, even when
// the caller's environment has one (CI sets REDIS_ADDR), and the run's own configuration reads the cluster
// form; on one server, an inherited REDIS_CLUSTER_ADDRS is dropped likewise.
func TestClusterEnvironment(t *testing.T) {
	t.Parallel()
	inherited := []string{"REDIS_ADDR=127.0.0.1:6379", "REDIS_CLUSTER_ADDRS=10.0.0.1:7000", "PATH=/usr/bin",
		"REDIS_KEY_PREFIX=run7:", "MYSQL_DSN=root@tcp(127.0.0.1:3306)/x"}
	for _, c := range []struct {
		name        string
		t           *topology
		want, unset string
		form        config.RedisForm
	}{
		{"cluster", &topology{redis: "127.0.0.1:7001,127.0.0.1:7002", cluster: redislab.Existing([]string{"127.0.0.1:7001"})},
			"REDIS_CLUSTER_ADDRS=127.0.0.1:7001,127.0.0.1:7002", "REDIS_ADDR", config.RedisCluster},
		{"one server", &topology{redis: "127.0.0.1:7003"}, "REDIS_ADDR=127.0.0.1:7003", "REDIS_CLUSTER_ADDRS", config.RedisServer},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := c.t.commonEnvMap()
			delete(m, "MYSQL_DSN") // the run's own is set when its database is; here the caller's stands
			env := childEnv(inherited, envList(m))
			if !slices.Contains(env, c.want) || !slices.Contains(env, "PATH=/usr/bin") {
				t.Errorf("environment %q lacks %s or the inherited PATH", env, c.want)
			}
			for _, kv := range env {
				if strings.HasPrefix(kv, c.unset+"=") {
					t.Errorf("environment has %s, want none", kv)
				}
			}
			cfg, err := c.t.storeConfig(inherited)
			if err != nil {
				t.Fatal(err)
			}
			if form, _ := cfg.RedisForm(); form != c.form {
				t.Errorf("the run's configuration reads %s, want %s", form, c.form)
			}
			// The run's own view of the stores reads what the processes read: the caller's key prefix.
			if cfg.RedisKeyPrefix != "run7:" {
				t.Errorf("the run's stores use the key prefix %q, want the processes' %q", cfg.RedisKeyPrefix, "run7:")
			}
		})
	}
}

// TestChildEnv: later lists override earlier ones key by key, and an empty value removes the key.
func TestChildEnv(t *testing.T) {
	t.Parallel()
	got := childEnv([]string{"A=1", "B=2", "C=3"}, []string{"B=", "A=4"}, []string{"D=5"})
	want := []string{"A=4", "C=3", "D=5"}
	if !slices.Equal(got, want) {
		t.Errorf("childEnv = %q, want %q", got, want)
	}
}

// TestLostWritesCountOnlyALoss runs the cluster faults on a Redis Cluster alone (no stack, no load): a master
// kill counts once its replica is promoted; the lost writes count when the probe key is gone after the
// promotion, and count as missed, not injected, when the replica was only paused (its kernel kept the
// stream): a run in which nothing was lost must not report a loss.
func TestLostWritesCountOnlyALoss(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a Redis Cluster and fails it over three times")
	}
	if skip, err := clusterPreflight(os.Getenv, exec.LookPath); err != nil {
		t.Fatal(err)
	} else if skip != "" {
		t.Skip(skip)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	c, err := redislab.Start(ctx, 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	rdb, err := platform.OpenRedis(ctx, config.Config{RedisClusterAddrs: c.Addrs()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	top := &topology{cluster: c, rs: redisstock.New(rdb, "", 0), log: testWriter{t}}
	rec := newRecorder()
	for _, f := range []masterKill{
		{t: top, rec: rec, sku: clusterSKU},
		{t: top, rec: rec, sku: clusterSKU, loseWrites: true, keepLink: true},
		{t: top, rec: rec, sku: clusterSKU, loseWrites: true},
	} {
		if err := f.Inject(ctx); err != nil {
			t.Fatalf("%s (keepLink %v): %v", f.Name(), f.keepLink, err)
		}
	}
	want := map[string]int64{"faults_redis_master_kill": 1, "faults_redis_lost_writes": 1, "missed_redis_lost_writes": 1}
	got := map[string]int64{}
	(&runState{t: top, rec: rec, log: top.log}).faultCounters(got)
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%s = %d, want %d (counters %v)", k, got[k], n, got)
		}
	}
	if got["recovery_ms_redis_lost_writes"] <= 0 || got["recovery_ms_redis_master_kill"] <= 0 {
		t.Errorf("no recovery time recorded: %v", got)
	}
}

// TestSoakOnAClusterDrawsTheMasterKills: `chaos soak -redis-cluster` runs on a cluster of its own, and its soak
// draws the master kills beside the other faults; on one Redis it draws none.
func TestSoakOnAClusterDrawsTheMasterKills(t *testing.T) {
	t.Parallel()
	sc, err := parseScenario("soak", []string{"-redis-cluster"}, io.Discard)
	if err != nil || !sc.RedisCluster {
		t.Fatalf("parseScenario(soak -redis-cluster) = %+v, %v; want the cluster topology", sc, err)
	}
	for _, c := range []struct {
		name string
		top  *topology
		want bool
	}{
		{"cluster", &topology{cluster: redislab.Existing([]string{"127.0.0.1:7001"})}, true},
		{"one server", &topology{}, false},
	} {
		r := &runState{sc: sc, t: c.top}
		var kinds []string
		for _, f := range r.soakFaults() {
			kinds = append(kinds, f.Name())
		}
		for _, k := range []string{"redis_master_kill", "redis_lost_writes"} {
			if slices.Contains(kinds, k) != c.want {
				t.Errorf("%s: the soak's faults %v: %s drawn = %v, want %v", c.name, kinds, k, !c.want, c.want)
			}
		}
	}
}
