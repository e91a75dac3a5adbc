package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/redisstock"
	"github.com/redis/go-redis/v9"
)

// The shard pairs (2f on the one Redis, 2g on the cluster): one hot SKU's Lua reserve, its stock in 8 shards
// against the same SKU's stock in one counter, on the same Redis (or cluster) and client, in the same run
// (redisstock.Store.ReserveIn, as the order workflow reserves: the walk from the order's own start shard). On
// one server the shards are the same server's keys, so 8 should cost about what 1 does; on a cluster the 8
// shards' hash slots spread over its masters, where one counter is one master's. Each side also says what the
// machine's CPU did meanwhile (cpuUse): on one small machine a cluster's masters share its cores, and a side
// that finds them busy cannot gain from spreading.

// shardsMeasured is the shard count of the measured side (the limit is 1: one counter).
const shardsMeasured = 8

// shardStock is each shard's stock: far more than a measure can reserve, so no reserve ever finds its start
// shard short and walks on (the walk's common case: one script per reserve, as for a SKU not split).
const shardStock = 1 << 40

// benchShards measures pair layer on rdb: the reserve of one unit of a SKU whose stock is in shardsMeasured
// shards against the same of a SKU whose stock is one counter. where names the Redis (one server, or a cluster)
// for the comment.
func benchShards(ctx context.Context, o opts, rdb redis.UniversalClient, prefix, layer, only, where string) (pair, error) {
	rs := redisstock.New(rdb, prefix, time.Hour)
	one, split := "BENCH-HOT-1", "BENCH-HOT-"+strconv.Itoa(shardsMeasured)
	if err := rs.SetAvailable(ctx, one, shardStock); err != nil {
		return pair{}, err
	}
	for i := range shardsMeasured {
		if err := rs.SetAvailable(ctx, redisstock.ShardName(split, i), shardStock); err != nil {
			return pair{}, err
		}
	}
	if err := rs.SetShards(ctx, split, shardsMeasured); err != nil {
		return pair{}, err
	}
	reserve := func(n int, sku string) op {
		return func(ctx context.Context, w int, seq int64) error {
			out, err := rs.ReserveIn(ctx, n, "o-"+strconv.FormatInt(seq, 10), "", sku, 1)
			if err == nil && out != ordersaga.Reserved {
				err = fmt.Errorf("reserve of %s in %d shards: %s, want %s", sku, n, out, ordersaga.Reserved)
			}
			return err
		}
	}
	realOp, limitOp := reserve(shardsMeasured, split), reserve(1, one)
	// The script loaded on every server before either side counts.
	for i := range int64(2 * shardsMeasured) {
		_ = realOp(ctx, 0, -1-i)
	}
	_ = limitOp(ctx, 0, -1)

	probe := newCPUProbe(ctx, rdb)
	realName := fmt.Sprintf("ReserveIn, %d shards", shardsMeasured)
	var real, limit result
	var realCPU, limitCPU cpuUse
	for range max(o.rounds, 1) {
		r, u := probe.measure(func() result { return measure(ctx, "ReserveIn, 1 shard", o.conc, o.warmup, o.dur, limitOp) })
		limit.merge(r)
		limitCPU.add(u)
		r, u = probe.measure(func() result { return measure(ctx, realName, o.conc, o.warmup, o.dur, realOp) })
		real.merge(r)
		realCPU.add(u)
	}
	placed := shardPlacement(ctx, rdb, rs, split, shardsMeasured)
	comment := fmt.Sprintf("%s, %d goroutines, one hot SKU, a distinct order per call, %d units a shard (never short: one script per reserve); %s; CPU of the %d cores during %s: %s; during 1 shard: %s",
		where, o.conc, int64(shardStock), placed, runtime.NumCPU(), realName, realCPU.text(probe), limitCPU.text(probe))
	return pair{Layer: layer, Real: real, Limit: limit, Only: only, InMarkdown: true, Comment: comment}, nil
}

// shardPlacement says where the n shards of sku are: on one server, the same server; on a cluster, how many
// shards each master holds (by the master of each shard's counter's slot).
func shardPlacement(ctx context.Context, rdb redis.UniversalClient, rs *redisstock.Store, sku string, n int) string {
	cc, ok := rdb.(*redis.ClusterClient)
	if !ok {
		return fmt.Sprintf("the %d shards on the one server", n)
	}
	count := map[string]int{}
	for i := range n {
		m, err := cc.MasterForKey(ctx, rs.AvailKey(redisstock.ShardName(sku, i)))
		if err != nil {
			return fmt.Sprintf("the shards' masters unknown (%v)", err)
		}
		count[m.Options().Addr]++
	}
	one, err := cc.MasterForKey(ctx, rs.AvailKey("BENCH-HOT-1"))
	oneAddr := "?"
	if err == nil {
		oneAddr = one.Options().Addr
	}
	var parts []string
	for _, addr := range slices.Sorted(maps.Keys(count)) {
		parts = append(parts, fmt.Sprintf("%s %d", addr, count[addr]))
	}
	return fmt.Sprintf("the %d shards on %d masters (%s), the 1-shard SKU on %s", n, len(count), strings.Join(parts, ", "), oneAddr)
}

// cpuUse is what the machine's CPU did during a measured side, in cores (CPU seconds per second).
type cpuUse struct {
	elapsed time.Duration
	busy    time.Duration // the whole machine (/proc/stat: all but idle and iowait)
	servers time.Duration // the Redis servers of the side (their processes' utime + stime), when local
	self    time.Duration // this process
	known   bool          // /proc/stat was read
}

func (u *cpuUse) add(o cpuUse) {
	u.elapsed += o.elapsed
	u.busy += o.busy
	u.servers += o.servers
	u.self += o.self
	u.known = u.known || o.known
}

func (u cpuUse) cores(d time.Duration) float64 {
	if u.elapsed <= 0 {
		return 0
	}
	return d.Seconds() / u.elapsed.Seconds()
}

func (u cpuUse) text(p *cpuProbe) string {
	if !u.known {
		return "not measured (no /proc)"
	}
	s := fmt.Sprintf("machine %.2f busy", u.cores(u.busy))
	if len(p.pids) > 0 {
		s += fmt.Sprintf(", the %d redis-server(s) %.2f", len(p.pids), u.cores(u.servers))
	}
	return s + fmt.Sprintf(", bench %.2f", u.cores(u.self))
}

// cpuProbe reads the CPU time of the machine, of this process and of the Redis servers behind a client (their
// process IDs from INFO server: only a server on this machine is counted).
type cpuProbe struct {
	pids []int
}

func newCPUProbe(ctx context.Context, rdb redis.UniversalClient) *cpuProbe {
	p := &cpuProbe{}
	var mu sync.Mutex
	add := func(c *redis.Client) {
		info, err := c.Info(ctx, "server").Result()
		if err != nil {
			return
		}
		for _, line := range strings.Split(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
				if pid, err := strconv.Atoi(v); err == nil && procCPU(pid) >= 0 {
					mu.Lock()
					p.pids = append(p.pids, pid)
					mu.Unlock()
				}
			}
		}
	}
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		// Masters and replicas: a replica applies every write its master takes.
		_ = c.ForEachShard(ctx, func(ctx context.Context, n *redis.Client) error { add(n); return nil })
	case *redis.Client:
		add(c)
	}
	slices.Sort(p.pids)
	p.pids = slices.Compact(p.pids)
	return p
}

// measure runs fn and returns its result with the CPU used meanwhile (its warm-up included: the same load).
func (p *cpuProbe) measure(fn func() result) (result, cpuUse) {
	busy0, ok0 := machineBusy()
	srv0, self0 := p.servers(), selfCPU()
	start := time.Now()
	r := fn()
	u := cpuUse{elapsed: time.Since(start), servers: p.servers() - srv0, self: selfCPU() - self0}
	busy1, ok1 := machineBusy()
	u.known = ok0 && ok1
	u.busy = busy1 - busy0
	return r, u
}

func (p *cpuProbe) servers() time.Duration {
	var t time.Duration
	for _, pid := range p.pids {
		t += max(procCPU(pid), 0)
	}
	return t
}

// clockTick is the unit of /proc's CPU times (USER_HZ: 100 on Linux).
const clockTick = 10 * time.Millisecond

// procCPU is the CPU time (user + system) of a process of this machine; -1 when it cannot be read.
func procCPU(pid int) time.Duration {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return -1
	}
	// The command name (field 2) is in parentheses and may hold spaces: count fields after its ')'.
	i := strings.LastIndexByte(string(raw), ')')
	if i < 0 {
		return -1
	}
	f := strings.Fields(string(raw)[i+1:])
	if len(f) < 13 { // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name
		return -1
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return -1
	}
	return time.Duration(ut+st) * clockTick
}

// machineBusy is the CPU time all cores spent not idle since boot (/proc/stat's first line, less idle and
// iowait).
func machineBusy() (time.Duration, bool) {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	f := strings.Fields(line)
	if len(f) < 6 || f[0] != "cpu" {
		return 0, false
	}
	var busy int64
	for i, v := range f[1:] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, false
		}
		if i == 3 || i == 4 || i >= 8 { // idle, iowait; guest and guest_nice are counted in user already
			continue
		}
		busy += n
	}
	return time.Duration(busy) * clockTick, true
}
