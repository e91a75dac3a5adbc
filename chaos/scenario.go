package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/ordersaga/ordersaga/internal/killpoint"
)

// scenario is a subcommand's settings.
type scenario struct {
	Name     string
	Kills    int           // faults per kind (per kill point for worker kills)
	Orders   int           // orders placed at least
	Duration time.Duration // the load lasts at least this long (soak)
	Rate     float64       // orders started per second
	Stock    int           // initial stock per SKU (but one: stocks); 0: Orders, at least 20 (most orders reach Temporal)
	// StockShards splits the first SKU's Redis stock (the one whose master the cluster faults kill) over this
	// many counters (stock_shards; 0: not split).
	StockShards int
	KeepDB      bool
	Dir         string
	Only        []string // soak: draw only these fault kinds (their RESULT names); empty: every kind
	Rekill      bool     // worker kills may hit an order an earlier kill hit (workerKill.rekill)
	OwnMySQL    bool     // the run starts a MariaDB server of its own, which the mysql_restart fault may kill
	// RedisCluster: the run's Redis is a Redis Cluster of its own (3 masters, 1 replica each), whose
	// masters the cluster faults kill (cluster.go).
	RedisCluster bool
	Markdown     bool // after the RESULT line, print the run's rows of RELIABILITY.md's table (writeMarkdown)
}

// defaultScenario is a subcommand's defaults.
func defaultScenario(name string) (scenario, bool) {
	sc := scenario{Name: name, Rate: 8}
	switch name {
	case "worker-kill":
		sc.Kills, sc.Orders = 50, 100
	case "api-kill":
		sc.Kills, sc.Orders = 3, 100
	case "temporal-restart":
		sc.Kills, sc.Orders = 3, 100
	case "soak":
		sc.Orders, sc.Duration = 10000, 10*time.Minute
	case "short":
		sc.Kills, sc.Orders = 1, 100
	case "refund-kill":
		sc.Kills, sc.Orders = 1, 100
	case "cluster":
		// Stock for about a third of the demand: the SKUs sell out during the failovers, so that buyers are
		// refused while markers may be lost (refused_with_order has keys to check).
		sc.Kills, sc.Orders, sc.RedisCluster, sc.Stock = 1, 100, true, 30
	default:
		return scenario{}, false
	}
	return sc, true
}

// skus are the run's SKUs.
var skus = []string{"CHAOS-A", "CHAOS-B", "CHAOS-C", "CHAOS-D"}

// runState is what the phases of a run share.
type runState struct {
	sc   scenario
	t    *topology
	load *load
	rec  *recorder
	log  io.Writer
}

// runScenario starts the topology, seeds the SKUs, runs the scenario's phases, settles and judges.
func runScenario(ctx context.Context, sc scenario, log io.Writer) (result, error) {
	dir := sc.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "ordersaga-chaos-")
		if err != nil {
			return result{}, fmt.Errorf("work directory: %w", err)
		}
		dir = d
	}
	fmt.Fprintf(log, "chaos: %s: binaries, logs and the Temporal file in %s\n", sc.Name, dir)
	t, err := startTopology(ctx, dir, stack{OwnMySQL: sc.OwnMySQL, RedisCluster: sc.RedisCluster}, log)
	if err != nil {
		return result{}, err
	}
	r := &runState{sc: sc, t: t, rec: newRecorder(), log: log,
		load: newLoad("k"+strconv.FormatInt(time.Now().Unix(), 36), t.apiURLs, skus)}
	res, err := r.execute(ctx)
	clean := err == nil && res.OK()
	t.shutdown(clean && !sc.KeepDB)
	if clean && sc.Dir == "" {
		_ = os.RemoveAll(dir) // a clean run's binaries and logs; a failed run's stay for its post-mortem
	} else {
		fmt.Fprintf(log, "chaos: logs kept in %s\n", dir)
	}
	return res, err
}

// execute seeds, runs the phases and judges.
func (r *runState) execute(ctx context.Context) (result, error) {
	stocks := r.sc.stocks()
	if err := r.seed(ctx, stocks); err != nil {
		return result{}, err
	}
	started := time.Now()
	for _, ph := range r.phases() {
		if err := ph(ctx); err != nil {
			return result{}, err
		}
	}
	loadTime := time.Since(started)
	res, err := r.verdict(ctx, stocks)
	res.loadTime = loadTime
	return res, err
}

// stocks is each SKU's initial stock: Stock (0: Orders, at least 20), and a tenth of it (at least 3) for the
// last SKU, which sells out in every run, so that buyers are refused while the faults run and
// refused_with_order has keys to check.
func (sc scenario) stocks() map[string]int64 {
	stock := int64(sc.Stock)
	if stock == 0 {
		stock = int64(max(20, sc.Orders))
	}
	out := map[string]int64{}
	for _, sku := range skus {
		out[sku] = stock
	}
	out[soldOutSKU] = max(3, stock/10)
	return out
}

// soldOutSKU is the SKU with little stock (stocks).
var soldOutSKU = skus[len(skus)-1]

// seed creates the SKUs through the admin API.
func (r *runState) seed(ctx context.Context, stocks map[string]int64) error {
	for i, sku := range skus {
		spec := map[string]int64{"stock": stocks[sku], "price_cents": 999}
		if i == 0 && r.sc.StockShards > 0 {
			spec["stock_shards"] = int64(r.sc.StockShards)
		}
		body, _ := json.Marshal(spec)
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, r.t.apiURLs[0]+"/v1/inventory/"+sku, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+adminToken)
		req.Header.Set("Content-Type", "application/json")
		if err := putOnce(req); err != nil {
			return fmt.Errorf("seed %s: %w", sku, err)
		}
	}
	return nil
}

func putOnce(req *http.Request) error {
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("PUT %s: %d %s", req.URL.Path, resp.StatusCode, b)
	}
	return nil
}

// phase is one step of a scenario.
type phase func(ctx context.Context) error

// phases are the scenario's steps.
func (r *runState) phases() []phase {
	switch r.sc.Name {
	case "worker-kill":
		return []phase{r.workerKills}
	case "api-kill":
		return []phase{r.apiKills}
	case "temporal-restart":
		return []phase{r.temporalRestarts}
	case "soak":
		return []phase{r.soak}
	case "refund-kill":
		return []phase{r.refundFaults}
	case "cluster":
		return []phase{r.clusterFaults}
	default: // short: one of each
		return []phase{r.workerKills, r.apiKills, r.temporalRestarts, r.storeFaultsOnce}
	}
}

// underLoad runs faults while the load places orders at the scenario's rate, and returns once both are done.
func (r *runState) underLoad(ctx context.Context, minOrders int, faults func(ctx context.Context) error) error {
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		r.load.drive(ctx, r.sc.Rate, minOrders, stop)
		close(done)
	}()
	time.Sleep(2 * time.Second) // orders in flight before the first fault
	err := faults(ctx)
	close(stop)
	<-done
	return err
}

// workerKills arms each kill point Kills times in turn, with the load running.
func (r *runState) workerKills(ctx context.Context) error {
	return r.underLoad(ctx, r.phaseOrders(), func(ctx context.Context) error {
		for _, p := range killpoint.Points {
			f := workerKill{t: r.t, rec: r.rec, point: p, limit: 90 * time.Second, rekill: r.sc.Rekill}
			for range r.sc.Kills {
				if err := f.Inject(ctx); err != nil {
					return fmt.Errorf("%s: %w", f.Name(), err)
				}
			}
		}
		return nil
	})
}

// refundFaults, with the load making refunds: the refund provider blackholed for 10 s, then Kills times a
// worker armed at killpoint.RefundAfterSend (it dies between the provider's answer and the refund's mark, and
// is restarted); the verdict checks every refund at the provider once (refundCounts). The blackhole comes
// first, while the senders are flowing: after a kill the run's sender waits out the killed send (its
// heartbeat timeout) before it reads the outbox again, and a blackhole then can meet no request.
func (r *runState) refundFaults(ctx context.Context) error {
	return r.underLoad(ctx, r.phaseOrders(), func(ctx context.Context) error {
		if err := r.providerBlackhole().Inject(ctx); err != nil {
			return err
		}
		kill := r.refundKill()
		for range r.sc.Kills {
			if err := kill.Inject(ctx); err != nil {
				return fmt.Errorf("%s: %w", kill.Name(), err)
			}
		}
		return nil
	})
}

// refundKill is a worker kill at killpoint.RefundAfterSend (not in killpoint.Points: the saga's).
func (r *runState) refundKill() workerKill {
	return workerKill{t: r.t, rec: r.rec, point: killpoint.RefundAfterSend, limit: 90 * time.Second, rekill: r.sc.Rekill}
}

// providerBlackhole holds every refund request at the run's provider for 10 s.
func (r *runState) providerBlackhole() providerBlackhole {
	return providerBlackhole{t: r.t, rec: r.rec, d: 10 * time.Second}
}

// apiKills: Kills times, a burst of orders, an API killed a second into it, the burst's clients finishing
// against the other API, then the time until the admission counts are free again; the API is restarted.
func (r *runState) apiKills(ctx context.Context) error {
	per := max(20, r.phaseOrders()/max(1, r.sc.Kills))
	for range r.sc.Kills {
		stop := make(chan struct{})
		close(stop)
		done := make(chan struct{})
		go func() {
			r.load.drive(ctx, max(r.sc.Rate, 15), per, stop)
			close(done)
		}()
		time.Sleep(time.Second)
		i := rand.IntN(len(r.t.apis))
		if err := r.t.apis[i].kill(); err != nil {
			return err
		}
		killed := time.Now()
		r.rec.count("api_kill")
		<-done
		d, ok := admissionRecovery(ctx, r.t, skus, killed, 60*time.Second)
		if !ok {
			r.rec.leak()
		}
		r.rec.recovered("api_kill", d)
		fmt.Fprintf(r.log, "chaos: api-%d killed; admission counts free after %s (ok=%v)\n", i, d.Round(time.Millisecond), ok)
		if err := (apiKill{t: r.t, rec: r.rec}).restartAPI(ctx, i); err != nil {
			return err
		}
	}
	return nil
}

// temporalRestarts kills and restarts the Temporal server Kills times with the load running.
func (r *runState) temporalRestarts(ctx context.Context) error {
	return r.underLoad(ctx, r.phaseOrders(), func(ctx context.Context) error {
		f := r.temporalRestart()
		for range r.sc.Kills {
			if err := f.Inject(ctx); err != nil {
				return err
			}
			time.Sleep(5 * time.Second) // the load runs on the restarted server before the next kill
		}
		return nil
	})
}

// storeFaultsOnce injects each store fault once (storefaults.go: SCRIPT FLUSH, the database connections
// killed, Redis restarted empty and stopped for 10 s, the run's own MariaDB restarted) with the load running,
// 5 s apart.
func (r *runState) storeFaultsOnce(ctx context.Context) error {
	return r.underLoad(ctx, r.phaseOrders(), func(ctx context.Context) error {
		for _, f := range r.storeFaults() {
			if err := f.Inject(ctx); err != nil {
				return fmt.Errorf("%s: %w", f.Name(), err)
			}
			time.Sleep(5 * time.Second)
		}
		return nil
	})
}

// phaseOrders is the orders of one phase: the scenario's orders split over its phases.
func (r *runState) phaseOrders() int {
	return max(1, r.sc.Orders/len(r.phases()))
}

// soakFaults are the faults the soak draws from: the process faults, the refund faults (a worker killed after
// the provider's answer, the provider blackholed) and the store faults (storefaults.go).
func (r *runState) soakFaults() []fault {
	fs := []fault{apiKill{t: r.t, rec: r.rec, restartAfter: 2 * time.Second},
		r.temporalRestart(), r.refundKill(), r.providerBlackhole()}
	for _, p := range killpoint.Points {
		fs = append(fs, workerKill{t: r.t, rec: r.rec, point: p, limit: 90 * time.Second, rekill: r.sc.Rekill})
	}
	return append(fs, r.storeFaults()...)
}

// soak places Orders orders over at least Duration through both APIs, with a fault every 10-40 s: the kinds
// in a random order, each once per round, so that a long enough soak injects every kind.
func (r *runState) soak(ctx context.Context) error {
	if r.sc.Duration > 0 {
		r.sc.Rate = float64(r.sc.Orders) / r.sc.Duration.Seconds()
	}
	faults, err := only(r.soakFaults(), r.sc.Only)
	if err != nil {
		return err
	}
	return r.underLoad(ctx, r.sc.Orders, func(ctx context.Context) error {
		end := time.Now().Add(r.sc.Duration)
		for i := 0; time.Now().Before(end); i++ {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Duration(10+rand.IntN(30)) * time.Second):
			}
			if i%len(faults) == 0 {
				rand.Shuffle(len(faults), func(a, b int) { faults[a], faults[b] = faults[b], faults[a] })
			}
			f := faults[i%len(faults)]
			if err := f.Inject(ctx); err != nil {
				return fmt.Errorf("%s: %w", f.Name(), err)
			}
		}
		return nil
	})
}

// only keeps the faults named in names (all of them when names is empty); a name that is no fault's is an
// error listing the kinds.
func only(fs []fault, names []string) ([]fault, error) {
	if len(names) == 0 {
		return fs, nil
	}
	byName := map[string]fault{}
	var kinds []string
	for _, f := range fs {
		byName[f.Name()] = f
		kinds = append(kinds, f.Name())
	}
	var kept []fault
	for _, n := range names {
		f, ok := byName[n]
		if !ok {
			return nil, fmt.Errorf("-only: %q is not a fault kind of this run (%s)", n, strings.Join(kinds, ", "))
		}
		kept = append(kept, f)
	}
	return kept, nil
}
