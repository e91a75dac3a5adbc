// Command bench measures each layer of ordersaga against its limit on this machine, in one process, pair by
// pair back to back, and prints one table with the absolute rates and their ratio:
//
//  1. sold-out rejections through the HTTP API vs a bare net/http handler answering 409;
//  2. the Lua reserve vs a trivial EVALSHA on the same Redis; a hot SKU's reserve with its stock in 8 shards vs
//     in one counter (redisstock.Store.ReserveIn); with -redis-cluster (or -redis-cluster-addrs), the sold-out
//     check and the Lua reserve on a Redis Cluster vs the same on the one Redis, and the 8 shards vs 1 on the
//     cluster, in the same run;
//  3. orders accepted end to end vs a bare workflow of the same shape on the same Temporal server;
//  4. the DB deduct transaction on one hot SKU vs the bare conditional UPDATE on the same database;
//  5. orders accepted per second during a flood of sold-out orders at 10x that rate vs without the flood
//     (flashsale --flood-pair against the local stack run as a subprocess; layer "flood").
//
// It needs the machine's Redis (REDIS_ADDR, default 127.0.0.1:6379) and MariaDB (MYSQL_DSN, default
// root@tcp(127.0.0.1:3306)/test). Run it with scripts/bench.sh; -markdown prints the table BENCHMARKS.md opens
// with (writeMarkdown), the text table then going to stderr.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/ordersaga/ordersaga/internal/gitrev"
	"github.com/ordersaga/ordersaga/internal/placement"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args, os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		stop()
		os.Exit(1)
	}
}

type opts struct {
	only           map[string]bool
	dur, warmup    time.Duration
	rounds         int
	conc           int
	placeConc      int
	redisAddr      string
	startCluster   bool   // -redis-cluster
	clusterAddrs   string // -redis-cluster-addrs
	mysqlDSN       string
	sqlite         bool
	temporalStores []string
	profileDir     string
	wftPollers     int
	floodDur       time.Duration
	floodWarmup    time.Duration
	floodX         float64
	markdown       bool
	tmp            string
}

func (o opts) want(layer string) bool { return len(o.only) == 0 || o.only[layer] }

func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	var (
		o      opts
		only   string
		stores string
	)
	fs.StringVar(&only, "only", "", "comma-separated layers to run: http, redis, temporal, db, flood (default all)")
	fs.DurationVar(&o.dur, "duration", 3*time.Second, "measured time of each side of a pair, per round")
	fs.IntVar(&o.rounds, "rounds", 2, "rounds of each pair; the two sides alternate, limit first")
	fs.DurationVar(&o.warmup, "warmup", time.Second, "unmeasured time before each side")
	fs.IntVar(&o.conc, "concurrency", 64, "goroutines of the HTTP, Redis and DB pairs")
	fs.IntVar(&o.placeConc, "place-concurrency", 64, "concurrent orders of the Temporal pair")
	fs.StringVar(&o.redisAddr, "redis", orDefault(getenv("REDIS_ADDR"), "127.0.0.1:6379"), "Redis address (default $REDIS_ADDR or 127.0.0.1:6379)")
	fs.BoolVar(&o.startCluster, "redis-cluster", false, "also measure the Redis pairs' operations on a Redis Cluster of 3 masters and 3 replicas that bench starts for the run, each against the same on -redis (in the redis step)")
	fs.StringVar(&o.clusterAddrs, "redis-cluster-addrs", "", "like -redis-cluster, on the running Redis Cluster at these comma-separated seeds")
	fs.StringVar(&o.mysqlDSN, "mysql", orDefault(getenv("MYSQL_DSN"), "root@tcp(127.0.0.1:3306)/test"), "MySQL/MariaDB DSN; the benchmark creates and drops a database of its own")
	fs.BoolVar(&o.sqlite, "sqlite", true, "also run the DB pair on SQLite (the local stack's database)")
	fs.StringVar(&stores, "temporal", "real,localstack", "setups of the Temporal pair: real (temporaltest, Redis + MariaDB), embedded (temporaltest, miniredis + SQLite), localstack (the local stack's file-backed server, miniredis + SQLite, and candidate server settings)")
	fs.IntVar(&o.wftPollers, "pollers", 0, "workflow and activity task pollers of every worker of the Temporal pair (0 = as the order worker polls: autoscaling workflow task pollers, platform.WithOrderPollers)")
	fs.StringVar(&o.profileDir, "profile", "", "write a CPU profile of each real side of the HTTP, Temporal and DB pairs, and of the local stack during each phase of the flood pair, into this directory")
	fs.DurationVar(&o.floodDur, "flood-duration", 20*time.Second, "counted time of each phase of the flood pair (one run, not -rounds)")
	fs.DurationVar(&o.floodWarmup, "flood-warmup", 2*time.Second, "uncounted time before each phase of the flood pair")
	fs.Float64Var(&o.floodX, "flood-x", 10, "the flood pair's sold-out rate as a multiple of the accepted rate without the flood")
	fs.BoolVar(&o.markdown, "markdown", false, "print BENCHMARKS.md's headline table (one row per layer, with the machine, commit, date and the command of each row) on stdout, and the text table on stderr")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if o.startCluster && o.clusterAddrs != "" {
		return fmt.Errorf("-redis-cluster starts a cluster and -redis-cluster-addrs names one: set one of them")
	}
	if only != "" {
		o.only = map[string]bool{}
		for _, l := range strings.Split(only, ",") {
			o.only[strings.TrimSpace(l)] = true
		}
	}
	for _, s := range strings.Split(stores, ",") {
		if s = strings.TrimSpace(s); s != "" {
			o.temporalStores = append(o.temporalStores, s)
		}
	}
	tmp, err := os.MkdirTemp("", "ordersaga-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	o.tmp = tmp

	started := time.Now()
	loadBefore := loadAverage()
	var pairs []pair
	details := &strings.Builder{}
	steps := []struct {
		name string
		fn   func() ([]pair, error)
	}{
		{"http", func() ([]pair, error) { return benchHTTP(ctx, o) }},
		{"redis", func() ([]pair, error) { return benchRedis(ctx, o) }},
		{"db", func() ([]pair, error) { return benchDB(ctx, o) }},
		{"temporal", func() ([]pair, error) { return benchTemporal(ctx, o, details) }},
		{"flood", func() ([]pair, error) { return benchFlood(ctx, o) }},
	}
	for _, s := range steps {
		if !o.want(s.name) {
			continue
		}
		fmt.Fprintf(os.Stderr, "bench: %s …\n", s.name)
		load := loadAverage()
		p, err := s.fn()
		for i := range p {
			p[i].Load = load
			if p[i].Only == "" {
				p[i].Only = s.name
			}
		}
		pairs = append(pairs, p...)
		if err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	text := stdout
	if o.markdown {
		text = os.Stderr
		writeMarkdown(stdout, pairs, runInfo{CPUs: runtime.NumCPU(), CPU: cpuModel(), Commit: gitrev.Commit("."), Started: started})
	}
	writeTable(text, pairs, started, loadBefore, loadAverage(), o)
	fmt.Fprint(text, details.String())
	return nil
}

func writeTable(w io.Writer, pairs []pair, started time.Time, loadBefore, loadAfter string, o opts) {
	fmt.Fprintf(w, "ordersaga benchmarks — %s; each side measured %d × %s (after %s warm-up each), sides alternating\n",
		started.UTC().Format("2006-01-02 15:04 MST"), o.rounds, o.dur, o.warmup)
	fmt.Fprintf(w, "machine: %d CPUs (%s), %s %s/%s; load average before %s, after %s\n\n",
		runtime.NumCPU(), cpuModel(), runtime.Version(), runtime.GOOS, runtime.GOARCH, loadBefore, loadAfter)
	fmt.Fprintln(w, "| layer | measured | ops/s | p50 / p99 | limit | ops/s | p50 / p99 | ratio | target |")
	fmt.Fprintln(w, "|---|---|---:|---:|---|---:|---:|---:|---:|")
	for _, p := range pairs {
		target := p.targetMark("", "")
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %.0f%% | %s |\n", p.Layer, p.Real.Name, fmtRate(p.Real), fmtLat(p.Real),
			p.Limit.Name, fmtRate(p.Limit), fmtLat(p.Limit), p.Ratio()*100, target)
	}
	fmt.Fprintln(w)
	for _, p := range pairs {
		fmt.Fprintf(w, "- %s: %s", p.Layer, p.Comment)
		for _, r := range []result{p.Real, p.Limit} {
			if r.Errors > 0 {
				fmt.Fprintf(w, "; %s: %d errors, first: %v", r.Name, r.Errors, r.FirstErr)
			}
		}
		fmt.Fprintln(w)
	}
}

func cpuModel() string {
	raw, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

func loadAverage() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(raw))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func randomID() string {
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// apiOrderID is an order ID as the order API makes one for a new Idempotency-Key of user (placement.OrderID
// of a new nonce): the stores' indexes on order_id see the benchmark's orders arrive as they would the API's.
func apiOrderID(user, key string) string {
	return placement.OrderID(user, key, placement.NewNonce(), 0)
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
