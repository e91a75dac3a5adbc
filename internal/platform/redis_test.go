package platform_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/config"
	"github.com/ordersaga/ordersaga/internal/platform"
	"github.com/ordersaga/ordersaga/internal/redislab"
	"github.com/ordersaga/ordersaga/internal/redisstock"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

// redisConfig is the configuration of vars (FromEnv, so each form is checked as a process would check it).
func redisConfig(t *testing.T, vars map[string]string) config.Config {
	t.Helper()
	cfg, err := config.FromEnv(func(k string) string { return vars[k] })
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// openRedis is platform.OpenRedis of vars, closed at the test's end.
func openRedis(t *testing.T, vars map[string]string) redis.UniversalClient {
	t.Helper()
	rdb, err := platform.OpenRedis(context.Background(), redisConfig(t, vars), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// reserveOne loads sku with avail units under a prefix of the test's own and reserves one for order.
func reserveOne(t *testing.T, rdb redis.UniversalClient, avail int64) (*redisstock.Store, string) {
	t.Helper()
	ctx := context.Background()
	rs := redisstock.New(rdb, "platformtest"+testenv.RandomID(8)+":", time.Hour)
	sku := "SKU-" + testenv.RandomID(6)
	t.Cleanup(func() { testenv.DeleteKeys(t, rdb, rs.Prefix()+"*") })
	if err := rs.SetAvailable(ctx, sku, avail); err != nil {
		t.Fatal(err)
	}
	if out, err := rs.Reserve(ctx, "o-1", "u-1", sku, 1); err != nil || out != ordersaga.Reserved {
		t.Fatalf("reserve: %v, %v", out, err)
	}
	return rs, sku
}

// TestOpenRedis_OneServer: REDIS_ADDR opens a plain client with REDIS_POOL_SIZE connections, on which the
// stock store works.
func TestOpenRedis_OneServer(t *testing.T) {
	t.Parallel()
	addr := os.Getenv("REDIS_ADDR") // the machine's Redis in CI
	if addr == "" {
		addr = testenv.StartRedisServer(t).Addr
	}
	rdb := openRedis(t, map[string]string{"REDIS_ADDR": addr, "REDIS_POOL_SIZE": "17"})
	c, ok := rdb.(*redis.Client)
	if !ok {
		t.Fatalf("REDIS_ADDR opened a %T, want a *redis.Client", rdb)
	}
	if o := c.Options(); o.Addr != addr || o.PoolSize != 17 {
		t.Errorf("options: addr %s, pool %d; want %s, 17", o.Addr, o.PoolSize, addr)
	}
	rs, sku := reserveOne(t, rdb, 5)
	if avail, _, err := rs.Available(context.Background(), sku); err != nil || avail != 4 {
		t.Errorf("available after one reserve: %d, %v; want 4", avail, err)
	}
}

// TestOpenRedis_ClusterEvenWithOneSeed: REDIS_CLUSTER_ADDRS opens a cluster client even with one seed (where
// redis.NewUniversalClient would open a plain one, which fails on the first key of a slot the seed does not
// serve), and a hook added to the client, as tracing adds its own, sees the store's script calls.
func TestOpenRedis_ClusterEvenWithOneSeed(t *testing.T) {
	t.Parallel()
	node := testenv.StartRedisServer(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	admin := redis.NewClient(&redis.Options{Addr: node.Addr})
	defer admin.Close()
	if err := admin.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", 0, 16383).Err(); err != nil {
		t.Fatal(err)
	}
	for {
		info, err := admin.ClusterInfo(ctx).Result()
		if err == nil && strings.Contains(info, "cluster_state:ok") {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("one-node cluster not ok: %q, %v", info, err)
		case <-time.After(20 * time.Millisecond):
		}
	}

	rdb := openRedis(t, map[string]string{"REDIS_CLUSTER_ADDRS": node.Addr})
	if _, ok := rdb.(*redis.ClusterClient); !ok {
		t.Fatalf("REDIS_CLUSTER_ADDRS opened a %T, want a *redis.ClusterClient", rdb)
	}
	var seen atomic.Int64
	rdb.AddHook(countingHook{&seen})
	reserveOne(t, rdb, 5)
	if seen.Load() == 0 {
		t.Error("the hook added to the cluster client saw no command")
	}
}

// TestOpenRedis_ClusterFollowsAFailover: once a cluster has promoted the replica of a master SIGKILLed, the
// processes' cluster client serves that master's slots again within a few reloads of its slot map
// (config.RedisClusterStateReload), not after go-redis's default 60 s.
func TestOpenRedis_ClusterFollowsAFailover(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c, err := redislab.Start(ctx, 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	rdb := openRedis(t, map[string]string{"REDIS_CLUSTER_ADDRS": strings.Join(c.Addrs(), ",")})
	cc := rdb.(*redis.ClusterClient)
	const key = "failover-probe"
	if err := rdb.Set(ctx, key, "before", 0).Err(); err != nil {
		t.Fatal(err)
	}
	master, err := cc.MasterForKey(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	old := master.Options().Addr
	if err := c.Kill(old); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := c.WaitServed(wctx); err != nil {
		t.Fatal(err)
	}
	promoted := time.Now()
	bound := 10 * config.RedisClusterStateReload
	for {
		err := rdb.Set(ctx, key, "after", 0).Err()
		if err == nil {
			break
		}
		if time.Since(promoted) > bound {
			t.Fatalf("the key's slot still fails %s after the cluster promoted %s's replica: %v", bound, old, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("slot served again %s after the promotion", time.Since(promoted).Round(time.Millisecond))
}

type countingHook struct{ n *atomic.Int64 }

func (countingHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h countingHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmd)
	}
}
func (countingHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestOpenRedis_Credentials: the password (requirepass) and an ACL user and password open the client; a
// wrong password or user is refused at start with an error naming REDIS_ADDR, and never the password.
func TestOpenRedis_Credentials(t *testing.T) {
	t.Parallel()
	const pw, userPW, wrong = "req-pw-51d7", "acl-pw-08be", "wrong-pw-c3a1"
	plain := testenv.StartRedisServer(t, "--requirepass", pw)
	acl := testenv.StartRedisServer(t, "--user", "orders", "on", ">"+userPW, "~*", "&*", "+@all", "--user", "default", "off")
	ctx := context.Background()

	for name, vars := range map[string]map[string]string{
		"requirepass": {"REDIS_ADDR": plain.Addr, "REDIS_PASSWORD": pw},
		"acl_user":    {"REDIS_ADDR": acl.Addr, "REDIS_USERNAME": "orders", "REDIS_PASSWORD": userPW},
	} {
		t.Run(name+"_opens", func(t *testing.T) {
			rdb := openRedis(t, vars)
			reserveOne(t, rdb, 2)
		})
	}
	for name, vars := range map[string]map[string]string{
		"wrong_password":     {"REDIS_ADDR": plain.Addr, "REDIS_PASSWORD": wrong},
		"no_password":        {"REDIS_ADDR": plain.Addr},
		"acl_wrong_password": {"REDIS_ADDR": acl.Addr, "REDIS_USERNAME": "orders", "REDIS_PASSWORD": wrong},
		"acl_wrong_user":     {"REDIS_ADDR": acl.Addr, "REDIS_USERNAME": "nobody", "REDIS_PASSWORD": userPW},
	} {
		t.Run(name+"_is_refused", func(t *testing.T) {
			rdb, err := platform.OpenRedis(ctx, redisConfig(t, vars), nil)
			if err == nil {
				rdb.Close()
				t.Fatal("opened")
			}
			if !strings.Contains(err.Error(), "REDIS_ADDR="+vars["REDIS_ADDR"]) {
				t.Errorf("error %q does not name REDIS_ADDR and its address", err)
			}
			for _, secret := range []string{pw, userPW, wrong} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error %q holds a password", err)
				}
			}
		})
	}
}

// TestOpenRedis_TLS: REDIS_TLS with the server's CA opens the client; without the CA (the system's roots)
// the server's certificate is refused at start.
func TestOpenRedis_TLS(t *testing.T) {
	t.Parallel()
	ca := testenv.NewCA(t, "redis")
	srv := testenv.StartRedisServerTLS(t, ca, "--requirepass", "tls-pw-77aa")
	rdb := openRedis(t, map[string]string{
		"REDIS_ADDR": srv.Addr, "REDIS_PASSWORD": "tls-pw-77aa", "REDIS_TLS": "true", "REDIS_TLS_CA_FILE": ca.PEMPath,
	})
	reserveOne(t, rdb, 2)

	_, err := platform.OpenRedis(context.Background(), redisConfig(t, map[string]string{
		"REDIS_ADDR": srv.Addr, "REDIS_PASSWORD": "tls-pw-77aa", "REDIS_TLS": "true",
	}), nil)
	if err == nil || !strings.Contains(err.Error(), "certificate") || !strings.Contains(err.Error(), "REDIS_ADDR="+srv.Addr) {
		t.Errorf("without the CA: %v, want a certificate error naming REDIS_ADDR", err)
	}
	plain, err := platform.OpenRedis(context.Background(), redisConfig(t, map[string]string{"REDIS_ADDR": srv.Addr, "REDIS_PASSWORD": "tls-pw-77aa"}), nil)
	if err == nil {
		plain.Close()
		t.Error("plaintext to a TLS server opened")
	}
}

// TestOpenRedis_SentinelFollowsTheFailover: through REDIS_SENTINEL_*, the stock store reserves and releases
// on the master; once the master is SIGKILLed and the sentinels promote the replica, the same client reserves
// on the new master, from the counter, holds and markers the old one had (WAIT 1 made the replica have them).
func TestOpenRedis_SentinelFollowsTheFailover(t *testing.T) {
	t.Parallel()
	s := testenv.StartSentinel(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	vars := map[string]string{"REDIS_SENTINEL_ADDRS": strings.Join(s.Sentinels, ","), "REDIS_SENTINEL_MASTER": s.Master}

	t.Run("unknown_master_name_is_refused", func(t *testing.T) {
		_, err := platform.OpenRedis(ctx, redisConfig(t, map[string]string{
			"REDIS_SENTINEL_ADDRS": vars["REDIS_SENTINEL_ADDRS"], "REDIS_SENTINEL_MASTER": "nope"}), nil)
		if err == nil || !strings.Contains(err.Error(), "REDIS_SENTINEL_ADDRS="+vars["REDIS_SENTINEL_ADDRS"]) ||
			!strings.Contains(err.Error(), "REDIS_SENTINEL_MASTER=nope") {
			t.Errorf("error %v: want one naming the sentinels and the master name", err)
		}
	})

	rdb := openRedis(t, vars)
	if _, ok := rdb.(*redis.Client); !ok {
		t.Fatalf("REDIS_SENTINEL_ADDRS opened a %T, want the failover *redis.Client", rdb)
	}
	rs, sku := reserveOne(t, rdb, 10) // o-1 holds 1: 9 left
	if out, err := rs.Reserve(ctx, "o-2", "u-2", sku, 2); err != nil || out != ordersaga.Reserved {
		t.Fatalf("reserve o-2: %v, %v", out, err)
	}
	if out, err := rs.Release(ctx, "o-1", "u-1", sku); err != nil || out != ordersaga.Released {
		t.Fatalf("release o-1: %v, %v", out, err)
	}
	// 8 left, o-2 holds 2, o-1 released. The replica must have it all before the master dies.
	if n, err := rdb.Do(ctx, "WAIT", 1, 5000).Int64(); err != nil || n != 1 {
		t.Fatalf("WAIT 1: %d replicas, %v", n, err)
	}

	old := s.MasterAddr()
	if err := s.KillMaster(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.WaitFailover(ctx, old); err != nil {
		t.Fatal(err)
	}
	// The client learns the new master on its own; a reserve may fail while it does (bounded by ctx).
	var out ordersaga.ReserveOutcome
	var err error
	for {
		out, err = rs.Reserve(ctx, "o-3", "u-3", sku, 3)
		if err == nil || ctx.Err() != nil {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
	if err != nil || (out != ordersaga.Reserved && out != ordersaga.Duplicate) {
		t.Fatalf("reserve o-3 after the failover: %v, %v", out, err)
	}
	if avail, loaded, err := rs.Available(ctx, sku); err != nil || !loaded || avail != 5 {
		t.Errorf("available on the new master: %d (loaded %v), %v; want 8 - 3 = 5", avail, loaded, err)
	}
	if out, err := rs.Release(ctx, "o-2", "u-2", sku); err != nil || out != ordersaga.Released {
		t.Errorf("release o-2 (held before the failover): %v, %v", out, err)
	}
	if _, err := rs.Reserve(ctx, "o-1", "u-1", sku, 1); !errors.Is(err, ordersaga.ErrCompensated) {
		t.Errorf("reserve o-1 again (released before the failover): %v, want ErrCompensated", err)
	}
}

// TestRedisOptions_CarryTheConfiguration: the one options function carries the addresses, the master's
// name, both passwords, TLS and the pool into the client's options.
func TestRedisOptions_CarryTheConfiguration(t *testing.T) {
	t.Parallel()
	ca := testenv.NewCA(t, "redis")
	opts, err := platform.RedisOptions(redisConfig(t, map[string]string{
		"REDIS_SENTINEL_ADDRS": "s1:26379,s2:26379", "REDIS_SENTINEL_MASTER": "orders", "REDIS_SENTINEL_PASSWORD": "spw",
		"REDIS_USERNAME": "app", "REDIS_PASSWORD": "pw", "REDIS_TLS": "true", "REDIS_TLS_CA_FILE": ca.PEMPath,
		"REDIS_TLS_SERVER_NAME": "redis.internal", "REDIS_POOL_SIZE": "40",
	}))
	if err != nil {
		t.Fatal(err)
	}
	f := opts.Failover()
	if strings.Join(f.SentinelAddrs, ",") != "s1:26379,s2:26379" || f.MasterName != "orders" || f.SentinelPassword != "spw" ||
		f.Username != "app" || f.Password != "pw" || f.PoolSize != 40 || f.MinIdleConns != 8 {
		t.Errorf("failover options: %+v", f)
	}
	if f.TLSConfig == nil || f.TLSConfig.ServerName != "redis.internal" || !f.TLSConfig.RootCAs.Equal(ca.Pool()) {
		t.Errorf("TLS: %+v, want the CA of REDIS_TLS_CA_FILE and REDIS_TLS_SERVER_NAME", f.TLSConfig)
	}

	def, err := platform.RedisOptions(config.Config{RedisAddr: "a:1"})
	if err != nil {
		t.Fatal(err)
	}
	if def.PoolSize != 128 || def.TLSConfig != nil || def.Password != "" {
		t.Errorf("options of a bare configuration: pool %d, TLS %v, password set %v", def.PoolSize, def.TLSConfig, def.Password != "")
	}
}

// TestOpenRedis_NoFormIsAnError: a configuration with no Redis form is refused before anything is dialed
// (go-redis would dial localhost:6379).
func TestOpenRedis_NoFormIsAnError(t *testing.T) {
	t.Parallel()
	rdb, err := platform.OpenRedis(context.Background(), config.Config{}, nil)
	if !errors.Is(err, config.ErrRedisNotSet) {
		if rdb != nil {
			rdb.Close()
		}
		t.Errorf("OpenRedis of no form: %v, want ErrRedisNotSet", err)
	}
}
