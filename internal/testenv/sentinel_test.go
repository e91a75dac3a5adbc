package testenv_test

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ordersaga/ordersaga/internal/testenv"
)

// TestRedisServer_StopAndStartAgain: a server stopped and started again is back on its address; with
// --appendonly yes (an argument that overrides the tests' default of no) it has its keys back, without it
// they are gone, as for a Redis without persistence.
func TestRedisServer_StopAndStartAgain(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		args []string
		kept bool
	}{{"append-only file", []string{"--appendonly", "yes", "--appendfsync", "always"}, true}, {"nothing saved", nil, false}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := testenv.StartRedisServer(t, c.args...)
			ctx := context.Background()
			rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
			defer rdb.Close()
			if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
				t.Fatal(err)
			}
			if err := srv.Stop(); err != nil {
				t.Fatal(err)
			}
			if err := rdb.Ping(ctx).Err(); err == nil {
				t.Fatalf("%s answers after Stop", srv.Addr)
			}
			if err := srv.Start(); err != nil {
				t.Fatal(err)
			}
			if err := srv.Start(); err == nil {
				t.Error("Start of a running server: no error")
			}
			got, err := rdb.Get(ctx, "k").Result()
			switch {
			case c.kept && (err != nil || got != "v"):
				t.Errorf("GET k after the restart = %q, %v; want v (the append-only file loaded)", got, err)
			case !c.kept && !errors.Is(err, redis.Nil):
				t.Errorf("GET k after the restart = %q, %v; want no key (nothing saved)", got, err)
			}
		})
	}
}

// TestStartRedisServer_TakesItsArgumentsAndDiesWhenKilled: the server answers on its address with the
// arguments given (here a password), and after Kill nothing listens there.
func TestStartRedisServer_TakesItsArgumentsAndDiesWhenKilled(t *testing.T) {
	t.Parallel()
	srv := testenv.StartRedisServer(t, "--requirepass", "pw")
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, Password: "pw"})
	defer rdb.Close()
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatalf("ping %s with the password: %v", srv.Addr, err)
	}
	noPW := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer noPW.Close()
	if err := noPW.Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
		t.Errorf("ping %s without the password: %v, want NOAUTH (--requirepass not given to the server?)", srv.Addr, err)
	}
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	c, err := net.DialTimeout("tcp", srv.Addr, time.Second)
	if err == nil {
		c.Close()
		t.Fatalf("%s still accepts connections after Kill", srv.Addr)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("dial %s after Kill: %v, want connection refused", srv.Addr, err)
	}
}

// TestStartSentinel_PromotesTheReplicaWhenTheMasterDies: the three sentinels agree on the master, and once
// it is killed every one of them names the replica, which answers as a master.
func TestStartSentinel_PromotesTheReplicaWhenTheMasterDies(t *testing.T) {
	t.Parallel()
	s := testenv.StartSentinel(t)
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	if len(s.Sentinels) != 3 || s.Master == "" {
		t.Fatalf("sentinels %v, master name %q", s.Sentinels, s.Master)
	}
	for _, addr := range s.Sentinels {
		got := masterBySentinel(ctx, t, addr, s.Master)
		if got != s.MasterAddr() {
			t.Errorf("sentinel %s names master %s, want %s", addr, got, s.MasterAddr())
		}
	}
	old, replica := s.MasterAddr(), s.ReplicaAddr()
	if err := s.KillMaster(); err != nil {
		t.Fatal(err)
	}
	promoted, err := s.WaitFailover(ctx, old)
	if err != nil {
		t.Fatal(err)
	}
	if promoted != replica || s.MasterAddr() != replica {
		t.Errorf("promoted %s (MasterAddr %s), want the replica %s", promoted, s.MasterAddr(), replica)
	}
	for _, addr := range s.Sentinels {
		if got := masterBySentinel(ctx, t, addr, s.Master); got != replica {
			t.Errorf("sentinel %s names master %s after the failover, want %s", addr, got, replica)
		}
	}
	rdb := redis.NewClient(&redis.Options{Addr: replica})
	defer rdb.Close()
	role, err := rdb.Do(ctx, "ROLE").Slice()
	if err != nil || len(role) == 0 || role[0] != "master" {
		t.Errorf("ROLE of %s: %v, %v; want master", replica, role, err)
	}
	if slices.Contains(s.Sentinels, old) {
		t.Errorf("the master %s is among the sentinels %v", old, s.Sentinels)
	}
}

func masterBySentinel(ctx context.Context, t *testing.T, sentinel, name string) string {
	t.Helper()
	sc := redis.NewSentinelClient(&redis.Options{Addr: sentinel})
	defer sc.Close()
	hp, err := sc.GetMasterAddrByName(ctx, name).Result()
	if err != nil || len(hp) != 2 {
		t.Fatalf("SENTINEL get-master-addr-by-name %s on %s: %v, %v", name, sentinel, hp, err)
	}
	return net.JoinHostPort(hp[0], hp[1])
}

// TestSentinelMode_TestsShareTheMasterUnderTheirOwnPrefixes: in REDIS_SENTINEL=1 mode, two tests' clients
// are failover clients that write to the shared setup's master, each under a prefix of its own, and each
// test's keys are gone from the master once it has ended.
func TestSentinelMode_TestsShareTheMasterUnderTheirOwnPrefixes(t *testing.T) {
	if !testenv.SentinelMode() {
		t.Skip("needs REDIS_SENTINEL=1")
	}
	if !testenv.RealRedis() {
		t.Error("RealRedis() = false in Sentinel mode")
	}
	ctx := t.Context()
	s := testenv.SharedSentinel(t)
	master := redis.NewClient(&redis.Options{Addr: s.MasterAddr()})
	defer master.Close()
	var prefixes []string
	for _, name := range []string{"first", "second"} {
		t.Run(name, func(t *testing.T) {
			rdb, prefix := testenv.RedisClient(t)
			if _, ok := rdb.(*redis.Client); !ok {
				t.Fatalf("RedisClient = %T, want the *redis.Client of redis.NewFailoverClient", rdb)
			}
			if prefix == "" || slices.Contains(prefixes, prefix) {
				t.Fatalf("prefix %q, earlier ones %v: want a fresh one", prefix, prefixes)
			}
			prefixes = append(prefixes, prefix)
			if err := rdb.Set(ctx, prefix+"k", name, 0).Err(); err != nil {
				t.Fatal(err)
			}
			if got, err := master.Get(ctx, prefix+"k").Result(); err != nil || got != name {
				t.Errorf("GET %sk on the master %s = %q, %v; want %q", prefix, s.MasterAddr(), got, err, name)
			}
		})
	}
	for _, p := range prefixes {
		if keys, err := master.Keys(ctx, p+"*").Result(); err != nil || len(keys) > 0 {
			t.Errorf("the master keeps %v (%v) of prefix %s after its test's cleanup", keys, err, p)
		}
	}
}

// TestSentinelClient_FollowsAFailover: the failover client (the one RedisClient gives in Sentinel mode) goes
// on writing once the replica has taken over from a killed master, and reads what it wrote before (WAIT made
// sure the replica had it). A setup of the test's own: the shared one stays up for the other tests.
func TestSentinelClient_FollowsAFailover(t *testing.T) {
	t.Parallel()
	s := testenv.StartSentinel(t)
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	rdb := s.Client()
	defer rdb.Close()
	if err := rdb.Set(ctx, "before", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := rdb.Wait(ctx, 1, 5*time.Second).Result(); err != nil || n != 1 {
		t.Fatalf("WAIT 1 = %d, %v; want the replica to have the write", n, err)
	}
	old := s.MasterAddr()
	if err := s.KillMaster(); err != nil {
		t.Fatal(err)
	}
	promoted, err := s.WaitFailover(ctx, old)
	if err != nil {
		t.Fatal(err)
	}
	if err := rdb.Set(ctx, "after", "2", 0).Err(); err != nil {
		t.Fatalf("SET through the failover client after the failover to %s: %v", promoted, err)
	}
	direct := redis.NewClient(&redis.Options{Addr: promoted})
	defer direct.Close()
	for key, want := range map[string]string{"before": "1", "after": "2"} {
		if got, err := direct.Get(ctx, key).Result(); err != nil || got != want {
			t.Errorf("GET %s on the promoted master %s = %q, %v; want %q", key, promoted, got, err, want)
		}
		if got, err := rdb.Get(ctx, key).Result(); err != nil || got != want {
			t.Errorf("GET %s through the failover client = %q, %v; want %q", key, got, err, want)
		}
	}
}
