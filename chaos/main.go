// Command chaos runs the order saga as separate OS processes on this machine (one Temporal server, two order
// APIs, two workers, on the real MariaDB/MySQL of MYSQL_DSN and a Redis) and injects process faults while
// clients place, pay and cancel orders through both APIs; then it lets the system settle and checks the
// invariants (internal/invariants, with each order line's ledger units against its status, plus: no order
// stuck, no accepted order lost, no second order for an Idempotency-Key; every refund recorded is at the refund
// provider, a `paysim serve` of the run's own, exactly once). Each scenario prints one line starting with "RESULT "
// and exits non-zero when an invariant counter is not zero.
//
//	go run ./chaos worker-kill      [-kills 50] [-orders 100]
//	go run ./chaos api-kill         [-kills 3]  [-orders 100]
//	go run ./chaos temporal-restart [-kills 3]  [-orders 100]
//	go run ./chaos refund-kill      [-kills 1]  [-orders 100]
//	go run ./chaos cluster          [-kills 1]  [-orders 100]
//	go run ./chaos soak             [-orders 10000] [-duration 10m] [-redis-cluster]
//	go run ./chaos short            (what the test runs: one fault of each kind, a few hundred orders)
//
// cluster runs the stack on a Redis Cluster of its own (3 masters, 1 replica each; every process gets
// REDIS_CLUSTER_ADDRS) and, Kills times each, SIGKILLs the master of the first SKU's slot (redis_master_kill)
// and does so again after cutting its replica off, so that writes are lost (redis_lost_writes).
//
// The hidden subcommand "temporal-server --db FILE --port P" is the Temporal server process the others start.
// -markdown prints, after the RESULT line, the run's rows of the table RELIABILITY.md opens with.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/ordersaga/ordersaga/internal/gitrev"
)

func main() {
	os.Exit(run(signalContext(), os.Args[1:], os.Stdout, os.Stderr))
}

// signalContext ends at SIGINT or SIGTERM.
func signalContext() context.Context {
	ctx, _ := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	return ctx
}

// run dispatches a subcommand and returns the process's exit code: 0 when every invariant counter is zero, 1
// when one is not, 2 on a usage or set-up error.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: chaos worker-kill|api-kill|temporal-restart|refund-kill|cluster|soak|short [flags]")
		return 2
	}
	if args[0] == "temporal-server" {
		if err := serveTemporal(ctx, args[1:]); err != nil {
			fmt.Fprintln(stderr, "chaos temporal-server:", err)
			return 1
		}
		return 0
	}
	sc, err := parseScenario(args[0], args[1:], stderr)
	if err != nil {
		fmt.Fprintln(stderr, "chaos:", err)
		return 2
	}
	started := time.Now()
	res, err := runScenario(ctx, sc, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "chaos:", err)
		return 2
	}
	fmt.Fprintln(stdout, res.Line())
	if sc.Markdown {
		fmt.Fprintln(stdout)
		writeMarkdown(stdout, res, markdownRun{Commit: gitrev.Commit("."), Started: started, Command: "go run ./chaos " + strings.Join(args, " ")})
	}
	if !res.OK() {
		return 1
	}
	return 0
}

// parseScenario reads a scenario's flags; each subcommand has its own defaults.
func parseScenario(name string, args []string, stderr io.Writer) (scenario, error) {
	sc, ok := defaultScenario(name)
	if !ok {
		return scenario{}, fmt.Errorf("unknown subcommand %q: want worker-kill, api-kill, temporal-restart, refund-kill, cluster, soak or short", name)
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&sc.Kills, "kills", sc.Kills, "faults per kind (per kill point for worker-kill)")
	fs.IntVar(&sc.Orders, "orders", sc.Orders, "orders to place at least")
	fs.DurationVar(&sc.Duration, "duration", sc.Duration, "load lasts at least this long (soak)")
	fs.Float64Var(&sc.Rate, "rate", sc.Rate, "orders started per second across both APIs")
	fs.IntVar(&sc.Stock, "stock", sc.Stock, "initial stock of each SKU (0: -orders, at least 20)")
	fs.IntVar(&sc.StockShards, "stock-shards", 0, "split the first SKU's Redis stock over this many counters (stock_shards, 2 to 64; 0: not split)")
	fs.BoolVar(&sc.KeepDB, "keep-db", false, "keep the run's database (default: dropped when the verdict is clean)")
	fs.StringVar(&sc.Dir, "dir", "", "working directory for binaries, logs and the Temporal file (default: a new temporary one)")
	fs.BoolVar(&sc.Rekill, "rekill", false, "worker kills may hit an order an earlier kill already hit (default: such orders are spared)")
	fs.BoolVar(&sc.OwnMySQL, "own-mysql", false, "start a MariaDB server of the run's own (mariadb-install-db, mariadbd) instead of using MYSQL_DSN's, and add the mysql_restart fault (SIGKILL, 2 s down)")
	fs.BoolVar(&sc.RedisCluster, "redis-cluster", sc.RedisCluster, "run on a Redis Cluster of the run's own (3 masters, 1 replica each; redis-server and redis-cli): the soak then draws the master kills too")
	fs.BoolVar(&sc.Markdown, "markdown", false, "after the RESULT line, print the run's rows of RELIABILITY.md's table: one per fault kind, with the commit, date and command")
	onlyKinds := fs.String("only", "", "soak: comma-separated fault kinds to draw (e.g. redis_restart,mysql_kill_connections; default: every kind)")
	if err := fs.Parse(args); err != nil {
		return scenario{}, err
	}
	for _, k := range strings.Split(*onlyKinds, ",") {
		if k = strings.TrimSpace(k); k != "" {
			sc.Only = append(sc.Only, k)
		}
	}
	if sc.Kills < 0 || sc.Orders < 0 || sc.Rate <= 0 {
		return scenario{}, fmt.Errorf("%s: -kills and -orders must be >= 0 and -rate > 0", name)
	}
	return sc, nil
}
