package sqlstore_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/redisstock"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

const (
	flashUnits  = 100
	flashBuyers = 1000
)

// flashQtys returns the seeded quantities (1–3) the buyers of a flash sale ask for.
func flashQtys(seed uint64) []int64 {
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	out := make([]int64, flashBuyers)
	for i := range out {
		out[i] = 1 + rng.Int64N(3)
	}
	return out
}

// sampler reads a counter about every millisecond until stopped and remembers the lowest value it saw.
type sampler struct {
	stop     chan struct{}
	done     chan struct{}
	samples  atomic.Int64
	negative atomic.Int64
	min      atomic.Int64
	errs     atomic.Int64
	firstErr atomic.Value
	distinct int // values seen; read after done
}

func startSampler(ctx context.Context, read func(context.Context) (int64, error)) *sampler {
	s := &sampler{stop: make(chan struct{}), done: make(chan struct{})}
	s.min.Store(1 << 62)
	go func() {
		defer close(s.done)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		seen := map[int64]bool{}
		defer func() { s.distinct = len(seen) }()
		for {
			v, err := read(ctx)
			switch {
			case err != nil:
				if s.errs.Add(1) == 1 {
					s.firstErr.Store(err)
				}
			default:
				s.samples.Add(1)
				seen[v] = true
				if v < 0 {
					s.negative.Add(1)
				}
				if v < s.min.Load() {
					s.min.Store(v)
				}
			}
			select {
			case <-s.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

// finish stops the sampler and fails the test if it ever saw a negative value or could not read.
func (s *sampler) finish(t *testing.T, what string) {
	t.Helper()
	close(s.stop)
	<-s.done
	if n := s.negative.Load(); n > 0 {
		t.Errorf("%s was negative in %d of %d samples (lowest %d)", what, n, s.samples.Load(), s.min.Load())
	}
	if n := s.errs.Load(); n > 0 {
		t.Errorf("%s: %d sampler reads failed, first: %v", what, n, s.firstErr.Load())
	}
	if s.samples.Load() == 0 {
		t.Errorf("%s: the sampler took no sample", what)
	}
}

// sideRedis is a connection of its own to the Redis behind rs, so the sampler does not queue behind the
// flood for one of the pool's connections.
func sideRedis(t *testing.T, rs *redisstock.Store) *redis.Client {
	t.Helper()
	c, ok := rs.Client().(*redis.Client)
	if !ok {
		t.Fatalf("redis client is a %T, want *redis.Client", rs.Client())
	}
	side := redis.NewClient(&redis.Options{Addr: c.Options().Addr, PoolSize: 1})
	t.Cleanup(func() { side.Close() })
	return side
}

// openStoreWithReader is testenv.MustOpenStore plus a connection of its own to the same database, so the
// sampler does not queue behind the flood (SQLite's store has a single connection).
func openStoreWithReader(t *testing.T, items ...testenv.Item) (*sqlstore.Store, *sql.DB) {
	t.Helper()
	var (
		store  *sqlstore.Store
		reader *sql.DB
		err    error
	)
	if testenv.RealMySQL() {
		dsn := testenv.MySQLDatabase(t)
		if store, err = sqlstore.Open(t.Context(), dsn, ""); err == nil {
			reader, err = sql.Open("mysql", dsn)
		}
	} else {
		path := filepath.Join(t.TempDir(), "ordersaga.db")
		if store, err = sqlstore.Open(t.Context(), "", path); err == nil {
			reader, err = sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(5000)")
		}
	}
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { reader.Close(); store.Close() })
	reader.SetMaxOpenConns(1)
	for _, it := range items {
		if err := store.SetInventory(t.Context(), it.SKU, it.Stock, it.Price); err != nil {
			t.Fatalf("seed %s: %v", it.SKU, err)
		}
	}
	return store, reader
}

// runAll starts fn(i) for i in [0, n) in goroutines released at once and returns how long they took.
func runAll(n int, fn func(i int)) time.Duration {
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			fn(i)
		})
	}
	begin := time.Now()
	close(start)
	wg.Wait()
	return time.Since(begin)
}

// (a) The Redis reserve under a flash-sale flood: never below zero, every unit either held or available.
func TestConcurrentReserves_NeverOversellInRedis(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	rs, sku := testenv.MustOpenRedisSKU(t, flashUnits)
	qtys := flashQtys(1)

	side := sideRedis(t, rs)
	smp := startSampler(ctx, func(ctx context.Context) (int64, error) {
		return side.Get(ctx, rs.AvailKey(sku)).Int64()
	})
	errs := make([]error, flashBuyers)
	elapsed := runAll(flashBuyers, func(i int) {
		_, errs[i] = rs.Reserve(ctx, fmt.Sprintf("o%04d", i), "", sku, qtys[i])
	})
	smp.finish(t, "redis avail")

	accepted := map[string]int64{}
	var refused int
	minRefused := int64(1 << 62)
	for i, err := range errs {
		switch _, soldOut := ordersaga.IsSoldOut(err); {
		case err == nil:
			accepted[fmt.Sprintf("o%04d", i)] = qtys[i]
		case soldOut:
			refused++
			minRefused = min(minRefused, qtys[i])
		default:
			t.Errorf("reserve o%04d: %v, want success or sold out", i, err)
		}
	}
	holds, err := rs.Holds(ctx, sku)
	if err != nil {
		t.Fatal(err)
	}
	avail, loaded, err := rs.Available(ctx, sku)
	if err != nil || !loaded {
		t.Fatalf("avail after the flood: %d loaded=%v err=%v", avail, loaded, err)
	}
	var held int64
	for _, q := range holds {
		held += q
	}
	if !maps.Equal(holds, accepted) {
		t.Errorf("holds hash has %d orders (%d units), the successful reserves were %d orders", len(holds), held, len(accepted))
	}
	if held+avail != flashUnits {
		t.Errorf("held %d + avail %d = %d, want %d", held, avail, held+avail, flashUnits)
	}
	if held > flashUnits || avail < 0 {
		t.Errorf("oversold: held %d, avail %d", held, avail)
	}
	if refused > 0 && avail >= minRefused {
		t.Errorf("undersold: %d units left but a reserve of %d was refused", avail, minRefused)
	}
	t.Logf("redis (real=%v): %d reserves in %v: %d accepted (%d units held), %d sold out, %d left; %d samples (%d distinct values), lowest avail %d",
		testenv.RealRedis(), flashBuyers, elapsed.Round(time.Millisecond), len(accepted), held, refused, avail,
		smp.samples.Load(), smp.distinct, smp.min.Load())
}

// (b) The database deduct alone under the same flood: the conditional UPDATE never lets stock go below zero,
// every unit is either in stock or in exactly one DEDUCT row, and the only refusal is sold out.
func TestConcurrentDeducts_NeverOversellInTheDatabase(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	const sku = "FLASH"
	store, reader := openStoreWithReader(t, testenv.Item{SKU: sku, Stock: flashUnits, Price: 100})
	qtys := flashQtys(2)

	smp := startSampler(ctx, func(ctx context.Context) (int64, error) {
		var stock int64
		err := reader.QueryRowContext(ctx, "SELECT stock FROM inventory WHERE sku = ?", sku).Scan(&stock)
		return stock, err
	})
	errs := make([]error, flashBuyers)
	elapsed := runAll(flashBuyers, func(i int) {
		_, errs[i] = store.Deduct(ctx, deductIn(fmt.Sprintf("o%04d", i), line(sku, qtys[i])))
	})
	smp.finish(t, "db stock")

	succeeded := map[string]int64{}
	var refused int
	minRefused := int64(1 << 62)
	for i, err := range errs {
		switch _, soldOut := ordersaga.IsSoldOut(err); {
		case err == nil:
			succeeded[fmt.Sprintf("o%04d", i)] = qtys[i]
		case soldOut:
			refused++
			minRefused = min(minRefused, qtys[i])
		default:
			t.Errorf("deduct o%04d: %v, want success or sold out (conflicts must be retried inside Store)", i, err)
		}
	}
	c, err := store.Conservation(ctx, sku)
	if err != nil {
		t.Fatal(err)
	}
	stock, deducted, restored := c.Stock, c.Deducted, c.Restored
	if stock+deducted != flashUnits || restored != 0 {
		t.Errorf("stock %d + deducted %d = %d (restored %d), want %d", stock, deducted, stock+deducted, restored, flashUnits)
	}
	if deducted > flashUnits || stock < 0 {
		t.Errorf("oversold: deducted %d, stock %d", deducted, stock)
	}
	if refused > 0 && stock >= minRefused {
		t.Errorf("undersold: %d units left but a deduct of %d was refused", stock, minRefused)
	}
	ledger := map[string]int64{}
	for _, r := range ledgerOf(t, store, "") {
		if _, dup := ledger[r.OrderID]; dup || r.Op != sqlstore.OpDeduct {
			t.Errorf("unexpected ledger row %v", r)
		}
		ledger[r.OrderID] = r.Qty
	}
	if !maps.Equal(ledger, succeeded) {
		t.Errorf("ledger has %d DEDUCT rows, %d deducts succeeded; they must match one to one", len(ledger), len(succeeded))
	}
	var orders int64
	if err := store.DB().WithContext(ctx).Table("orders").Where("status = ?", string(ordersaga.StatusAwaitingPayment)).Count(&orders).Error; err != nil {
		t.Fatal(err)
	}
	if orders != int64(len(succeeded)) {
		t.Errorf("%d orders recorded, %d deducts succeeded", orders, len(succeeded))
	}
	checkI4(t, store)
	t.Logf("db %s: %d deducts in %v: %d succeeded (%d units), %d sold out, stock left %d; %d samples (%d distinct values), lowest stock %d",
		store.Dialect(), flashBuyers, elapsed.Round(time.Millisecond), len(succeeded), deducted, refused, stock,
		smp.samples.Load(), smp.distinct, smp.min.Load())
}

const raceRounds = 200

// (c) The hanging anomaly under concurrency: a restore (the compensation) and a late deduct of the same
// order race. Whichever wins, the stock ends where it started: either the deduct is refused by the zero
// tombstone, or the deduct lands first and the restore gives back exactly what it took.
func TestConcurrentRestoreAndLateDeduct_StockAlwaysComesBack(t *testing.T) {
	t.Parallel()
	raceRestoreAndLateDeduct(t, testenv.MustOpenStoreWith(t, testenv.Item{SKU: "RACE", Stock: 1000, Price: 100}))
}

// The same race when the server's default isolation is READ COMMITTED (no gap locks): the store must not
// depend on the server's setting.
func TestConcurrentRestoreAndLateDeduct_UnderReadCommitted(t *testing.T) {
	t.Parallel()
	raceRestoreAndLateDeduct(t, openReadCommitted(t, testenv.Item{SKU: "RACE", Stock: 1000, Price: 100}))
}

func raceRestoreAndLateDeduct(t *testing.T, store *sqlstore.Store) {
	ctx := t.Context()
	const sku, start = "RACE", 1000
	var deductFirst, restoreFirst int
	begin := time.Now()
	for round := range raceRounds {
		order := fmt.Sprintf("r%03d", round)
		qty := int64(1 + round%3)
		lines := []ordersaga.Line{line(sku, qty)}
		var (
			dErr, rErr error
			rOut       []ordersaga.RestoreLine
		)
		runAll(2, func(i int) {
			if (i+round)%2 == 0 { // alternate which goroutine is started first
				_, dErr = store.Deduct(ctx, deductIn(order, lines...))
			} else {
				rOut, rErr = store.Restore(ctx, order, lines)
			}
		})
		if rErr != nil {
			t.Fatalf("round %d: restore: %v", round, rErr)
		}
		got := ledgerOf(t, store, order)
		switch {
		case errors.Is(dErr, ordersaga.ErrCompensated):
			restoreFirst++
			if !slices.Equal(rOut, []ordersaga.RestoreLine{{SKU: sku, Tombstone: true}}) ||
				!slices.Equal(got, []ledgerRow{{order, sku, sqlstore.OpRestore, 0}}) {
				t.Fatalf("round %d: deduct refused but restore = %+v, ledger = %v; want a zero tombstone only", round, rOut, got)
			}
			if _, err := store.Order(ctx, order); !errors.Is(err, ordersaga.ErrNotFound) {
				t.Fatalf("round %d: refused deduct recorded an order (%v)", round, err)
			}
		case dErr == nil:
			deductFirst++
			if !slices.Equal(rOut, []ordersaga.RestoreLine{{SKU: sku, Qty: qty}}) ||
				!slices.Equal(got, []ledgerRow{{order, sku, sqlstore.OpDeduct, qty}, {order, sku, sqlstore.OpRestore, qty}}) {
				t.Fatalf("round %d: deduct landed but restore = %+v, ledger = %v; want %d back", round, rOut, got, qty)
			}
		default:
			t.Fatalf("round %d: deduct: %v, want success or ErrCompensated", round, dErr)
		}
		if s := stockOf(t, store, sku); s != start {
			t.Fatalf("round %d: stock %d after the race, want %d (deduct err %v, restore %+v)", round, s, start, dErr, rOut)
		}
	}
	checkI4(t, store)
	t.Logf("db %s: %d restore/late-deduct races in %v: deduct first %d, restore first (deduct refused) %d; stock back to %d every round",
		store.Dialect(), raceRounds, time.Since(begin).Round(time.Millisecond), deductFirst, restoreFirst, start)
}

// The same race in Redis: a release and a late reserve of the same order.
func TestConcurrentReleaseAndLateReserve_AvailAlwaysComesBack(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	const start = 1000
	rs, sku := testenv.MustOpenRedisSKU(t, start)
	var reserveFirst, releaseFirst int
	for round := range raceRounds {
		order := fmt.Sprintf("r%03d", round)
		qty := int64(1 + round%3)
		var (
			resErr, relErr error
			relOut         ordersaga.ReleaseOutcome
		)
		runAll(2, func(i int) {
			if (i+round)%2 == 0 {
				_, resErr = rs.Reserve(ctx, order, "", sku, qty)
			} else {
				relOut, relErr = rs.Release(ctx, order, "", sku)
			}
		})
		if relErr != nil {
			t.Fatalf("round %d: release: %v", round, relErr)
		}
		marker, merr := rs.Marker(ctx, order, sku)
		if merr != nil {
			t.Fatal(merr)
		}
		switch {
		case errors.Is(resErr, ordersaga.ErrCompensated):
			releaseFirst++
			if relOut != ordersaga.TombstoneReleased || marker != "T" {
				t.Fatalf("round %d: reserve refused but release = %q, marker %q", round, relOut, marker)
			}
		case resErr == nil:
			reserveFirst++
			if relOut != ordersaga.Released || marker != fmt.Sprintf("R:%d", qty) {
				t.Fatalf("round %d: reserve landed but release = %q, marker %q", round, relOut, marker)
			}
		default:
			t.Fatalf("round %d: reserve: %v", round, resErr)
		}
		avail, _, aerr := rs.Available(ctx, sku)
		holds, herr := rs.Holds(ctx, sku)
		if aerr != nil || herr != nil {
			t.Fatal(errors.Join(aerr, herr))
		}
		if avail != start || len(holds) != 0 {
			t.Fatalf("round %d: avail %d, holds %v after the race; want %d and none", round, avail, holds, start)
		}
	}
	t.Logf("redis (real=%v): %d release/late-reserve races: reserve first %d, release first (reserve refused) %d",
		testenv.RealRedis(), raceRounds, reserveFirst, releaseFirst)
}

// Retries overlapping their first attempt (an activity that timed out while still running) and the
// compensation retried too: two deducts and two restores of one order at once. At most one deduct takes
// stock, exactly one restore does the work, and the stock comes back.
func TestConcurrentRetriedDeductsAndRestores_OneEffectEach(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	const sku, start, rounds = "RETRY", 1000, 100
	store := testenv.MustOpenStoreWith(t, testenv.Item{SKU: sku, Stock: start, Price: 100})
	var landed, refused int
	for round := range rounds {
		order := fmt.Sprintf("d%03d", round)
		qty := int64(1 + round%3)
		lines := []ordersaga.Line{line(sku, qty)}
		var (
			dRes [2]ordersaga.DeductResult
			dErr [2]error
			rOut [2][]ordersaga.RestoreLine
			rErr [2]error
		)
		runAll(4, func(i int) {
			if i%2 == 0 {
				dRes[i/2], dErr[i/2] = store.Deduct(ctx, deductIn(order, lines...))
			} else {
				rOut[i/2], rErr[i/2] = store.Restore(ctx, order, lines)
			}
		})
		for i, err := range rErr {
			if err != nil {
				t.Fatalf("round %d: restore %d: %v", round, i, err)
			}
		}
		var work, dup []ordersaga.RestoreLine
		for _, out := range rOut {
			if len(out) != 1 {
				t.Fatalf("round %d: restore returned %+v", round, out)
			}
			if out[0].Duplicate {
				dup = append(dup, out[0])
			} else {
				work = append(work, out[0])
			}
		}
		if len(work) != 1 || len(dup) != 1 {
			t.Fatalf("round %d: restores = %+v, want one that worked and one duplicate", round, rOut)
		}
		got := ledgerOf(t, store, order)
		// A deduct is refused once the restore ran (tombstone or restored order), so the two may disagree:
		// both before the restore, both after, or one on each side. Whatever they say, one deduct at most
		// took stock, the restore gave exactly that back.
		var firsts int
		for i, err := range dErr {
			switch {
			case err == nil && !dRes[i].AlreadyDone:
				firsts++
			case err != nil && !errors.Is(err, ordersaga.ErrCompensated):
				t.Fatalf("round %d: deduct %d: %v, want success or ErrCompensated", round, i, err)
			}
		}
		switch {
		case dErr[0] != nil && dErr[1] != nil && firsts == 0 && work[0].Tombstone:
			refused++
			if !slices.Equal(got, []ledgerRow{{order, sku, sqlstore.OpRestore, 0}}) {
				t.Fatalf("round %d: deducts refused but ledger = %v", round, got)
			}
		case firsts == 1:
			landed++
			if work[0].Qty != qty || !slices.Equal(got, []ledgerRow{{order, sku, sqlstore.OpDeduct, qty}, {order, sku, sqlstore.OpRestore, qty}}) {
				t.Fatalf("round %d: deduct landed but restore = %+v, ledger = %v", round, work[0], got)
			}
		default:
			t.Fatalf("round %d: deducts %+v / %+v (%v / %v), restore %+v: want one first deduct restored, or none and a tombstone",
				round, dRes[0], dRes[1], dErr[0], dErr[1], work[0])
		}
		if s := stockOf(t, store, sku); s != start {
			t.Fatalf("round %d: stock %d, want %d", round, s, start)
		}
	}
	checkI4(t, store)
	t.Logf("db %s: %d rounds of 2 deducts + 2 restores at once: deduct landed first %d, refused %d",
		store.Dialect(), rounds, landed, refused)
}
