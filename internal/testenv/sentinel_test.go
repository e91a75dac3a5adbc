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
