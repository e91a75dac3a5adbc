package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga/internal/platform"
)

// The shard pair on the one Redis: both sides reserve without an error, and the comment says where the shards
// are and what the CPU did.
func TestShardPairOnOneRedis(t *testing.T) {
	o := opts{dur: 200 * time.Millisecond, rounds: 1, conc: 4, redisAddr: orDefault(os.Getenv("REDIS_ADDR"), "127.0.0.1:6379")}
	rdb, err := platform.OpenRedis(t.Context(), o.redisConfig(16), nil)
	if err != nil {
		t.Skipf("no Redis at %s: %v", o.redisAddr, err)
	}
	defer rdb.Close()
	prefix := "benchtest" + randomID() + ":"
	defer deleteKeys(t.Context(), rdb, prefix)
	p, err := benchShards(t.Context(), o, rdb, prefix, "2f test", "redis", "real Redis "+o.redisAddr)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []result{p.Real, p.Limit} {
		if r.Ops == 0 || r.Errors > 0 {
			t.Errorf("%s: %d ops, %d errors, first: %v", r.Name, r.Ops, r.Errors, r.FirstErr)
		}
	}
	if p.Real.Name != "ReserveIn, 8 shards" || p.Limit.Name != "ReserveIn, 1 shard" || !p.InMarkdown || p.Target != 0 {
		t.Errorf("pair %+v", p)
	}
	if !strings.Contains(p.Comment, "the 8 shards on the one server") || !strings.Contains(p.Comment, "machine ") {
		t.Errorf("comment: %s", p.Comment)
	}
}

func TestCPUReadings(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	if d := procCPU(os.Getpid()); d < 0 {
		t.Errorf("procCPU of this process: %v", d)
	}
	if d := procCPU(-5); d != -1 {
		t.Errorf("procCPU of no process: %v, want -1", d)
	}
	if b, ok := machineBusy(); !ok || b <= 0 {
		t.Errorf("machineBusy: %v, %v", b, ok)
	}
}
