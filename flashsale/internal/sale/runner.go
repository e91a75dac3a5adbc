package sale

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ordersaga/ordersaga"
)

// Options are how Run reports while it works.
type Options struct {
	// Progress receives the live progress (a bar when Terminal, else a line every Config.ProgressEvery).
	Progress io.Writer
	Terminal bool
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// CPU is the CPU the tool's process has used so far, read when the firing starts and ends for the
	// report's ToolCPU (the process's user + system time when nil; ok false leaves ToolCPU out).
	CPU func() (used time.Duration, ok bool)
	// DB, when set, is the stack's database, read for the database view instead of opening
	// Config.MySQLDSN or Config.SQLitePath (tests share the store's pool). Run does not close it.
	DB *sql.DB
}

// withDefaults fills what o leaves unset: the clock, a progress that goes nowhere, the process's CPU.
func (o Options) withDefaults() Options {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.CPU == nil {
		o.CPU = processCPU
	}
	return o
}

// Runner is one flash-sale run.
type Runner struct {
	cfg   Config
	opts  Options
	c     *Client
	stats *Stats
	skus  []string
	db    *DBReader

	fireStart, fireEnd time.Time
	toolCPU            *ToolCPU  // the tool's own CPU while firing (nil when the system does not say)
	fireUntil          time.Time // when the firing is to end (bots start no order after it)
	sent, skipped      atomic.Int64
	botRequests        atomic.Int64 // orders sent by bots (every attempt of every visit)
	inflight           atomic.Int64
	actionsLeft        atomic.Int64
	httpSem            chan struct{} // bounds the follow-up requests (payments, cancels, polls)
	// follow is the context of the follow-ups (payments, cancels, late payments); the wait for quiet
	// cancels it when its time is up.
	follow     context.Context
	stopFollow context.CancelFunc
	// places logs every order request from the start of the firing (placelog.go); startAvail is each SKU's
	// redis_available as the PUT that set its stock answered.
	places     *placeLog
	startAvail map[string]*int64
	// buyers logs every sale buyer's visit (buyerlog.go), on places' clock.
	buyers *buyerLog

	mu     sync.Mutex
	orders map[string]*OrderSnapshot // by order ID, every order answered 201
	order  []string                  // order IDs in the order they were accepted
	byKey  map[string][]string       // Idempotency-Key -> order IDs answered 201
	// unresolved are the buyers whose request got no usable answer; unknown counts those still unknown
	// after the resolution.
	unresolved []plan
	unknown    int
	payments   map[string]*PaymentSnapshot
	lastPay    time.Time // latest pay_by of an accepted order
	samples    map[string][]StockPoint
	phase      string
	waiting    string // what the wait for quiet still waits for
}

// StockPoint is one sample of a SKU's inventory.
type StockPoint struct {
	T              float64 `json:"t"`
	DBStock        int64   `json:"db_stock"`
	RedisAvailable *int64  `json:"redis_available"`
	Holds          int64   `json:"holds"`
}

// maxSampledSKUs bounds the SKUs whose stock is sampled over time.
const maxSampledSKUs = 20

// Run performs a whole run: set the stock, fire the buyers, act on the winners, wait for quiet, judge,
// and return the report (not yet written). cfg must have passed Validate. A cancelled ctx stops the
// firing and the wait early; the report then says the run was not quiet.
func Run(ctx context.Context, cfg Config, opts Options) (*Report, error) {
	opts = opts.withDefaults()
	r := &Runner{
		cfg:      cfg,
		opts:     opts,
		c:        NewClient(cfg.Target, cfg.AdminToken, cfg.WebhookSecret, cfg.Concurrency+64, cfg.RequestTimeout),
		skus:     cfg.SKUNames(),
		httpSem:  make(chan struct{}, 64),
		orders:   map[string]*OrderSnapshot{},
		byKey:    map[string][]string{},
		payments: map[string]*PaymentSnapshot{},
		samples:  map[string][]StockPoint{},
	}
	defer r.c.Close()
	closeDB, err := r.openDB(ctx)
	if err != nil {
		return nil, err
	}
	defer closeDB()
	if r.db != nil {
		n, err := r.db.LedgerRows(ctx, r.skus)
		if err != nil {
			return nil, err
		}
		if n > 0 {
			return nil, fmt.Errorf("the database already has %d ledger rows for SKUs %s*: the database checks need fresh SKUs (change --sku-prefix or leave it empty)", n, cfg.SKUPrefix)
		}
	}
	started := opts.Now()
	r.stats = NewStats(started)
	r.startAvail = make(map[string]*int64, len(r.skus))
	for _, sku := range r.skus {
		inv, err := r.c.PutInventory(ctx, sku, cfg.Stock, cfg.PriceCents, cfg.PerUserLimit, cfg.StockShards)
		if err != nil {
			return nil, fmt.Errorf("set stock: %w", err)
		}
		r.startAvail[sku] = inv.RedisAvailable
	}

	r.fireStart = opts.Now()
	r.places = newPlaceLog()
	r.buyers = newBuyerLog(r.places.from, cfg.Patience, cfg.MaxOvertakes)
	bg, stopBG := context.WithCancel(context.WithoutCancel(ctx))
	var bgWG sync.WaitGroup
	bgWG.Go(func() { r.sample(bg) })
	prog := newProgress(opts.Progress, opts.Terminal, cfg)
	bgWG.Go(func() { r.report(bg, prog) })

	r.follow, r.stopFollow = context.WithCancel(ctx)
	defer r.stopFollow()
	r.setPhase("firing")
	took := startToolCPU(opts.CPU)
	r.fire(ctx)
	r.toolCPU = took(r.stats.All())
	r.setPhase("asking again where the answer was lost")
	unknown := r.resolve(ctx)
	r.mu.Lock()
	r.unknown = unknown
	r.mu.Unlock()
	r.mu.Lock()
	lastPay := r.lastPay
	r.mu.Unlock()
	if wait := lastPay.Sub(opts.Now()); wait > time.Minute {
		fmt.Fprintf(opts.Progress, "flashsale: the last accepted order expires at %s (in %s): the wait for quiet lasts at least that long; run the stack with a short ORDER_PAYMENT_TIMEOUT (e.g. 30s) for a short sale\n",
			lastPay.Format(time.TimeOnly), wait.Round(time.Second))
	}
	r.setPhase("waiting for quiet")
	quiet := r.waitQuiet(ctx)
	r.setPhase("waiting for the refunds to reach the provider")
	checkProvider, skipped, err := r.awaitProvider(ctx)
	stopBG()
	bgWG.Wait()
	prog.finish()
	if err != nil {
		return nil, err
	}

	// The last reads use their own deadline: an interrupted run still gets its snapshot.
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	snap, err := r.snapshot(fctx, quiet)
	if err != nil {
		return nil, err
	}
	if err := r.readProvider(fctx, &snap, checkProvider, skipped); err != nil {
		return nil, err
	}
	verdict := Check(snap)
	return r.buildReport(started, snap, verdict), nil
}

// openDB sets the database view's reader: Options.DB, or else the database of Config.MySQLDSN or
// Config.SQLitePath (none when neither is given). closeDB closes what it opened.
func (r *Runner) openDB(ctx context.Context) (closeDB func(), err error) {
	switch {
	case r.opts.DB != nil:
		r.db = &DBReader{db: r.opts.DB}
	case r.cfg.MySQLDSN != "" || r.cfg.SQLitePath != "":
		db, err := OpenDBReader(ctx, r.cfg.MySQLDSN, r.cfg.SQLitePath)
		if err != nil {
			return func() {}, err
		}
		r.db = db
		return func() { db.Close() }, nil
	}
	return func() {}, nil
}

func (r *Runner) setPhase(p string) {
	r.mu.Lock()
	r.phase = p
	r.mu.Unlock()
}

// snapshot gathers the final view: inventory, every order's status, every payment answer, and the database.
func (r *Runner) snapshot(ctx context.Context, quiet bool) (Snapshot, error) {
	s := Snapshot{TakenAt: r.opts.Now(), Quiet: quiet, Grace: r.cfg.Grace}
	r.mu.Lock()
	s.UnknownOutcomes = r.unknown
	r.mu.Unlock()
	for _, sku := range r.skus {
		ss := SKUSnapshot{SKU: sku, Initial: r.cfg.Stock, PerUserLimit: r.cfg.PerUserLimit, StartAvailable: r.startAvail[sku]}
		if inv, shards, err := r.c.GetInventoryShards(ctx, sku); err == nil {
			ss.API, ss.StockShards = &inv, shards
		} else {
			r.stats.Error("inventory", err.Error())
		}
		s.SKUs = append(s.SKUs, ss)
	}
	s.Places = r.places.snapshot()
	s.Buyers = r.buyers.snapshot()
	r.mu.Lock()
	for _, id := range r.order {
		o := *r.orders[id]
		o.KeyOrderIDs = append([]string(nil), o.KeyOrderIDs...)
		s.Orders = append(s.Orders, o)
	}
	for _, id := range r.order {
		for _, ev := range []string{wrongPayEventID(id), payEventID(id), latePayEventID(id)} {
			if p, ok := r.payments[ev]; ok {
				cp := *p
				cp.Results = append([]string(nil), p.Results...)
				s.Payments = append(s.Payments, cp)
			}
		}
	}
	r.mu.Unlock()
	if r.db != nil {
		db, err := r.db.Snapshot(ctx, r.skus)
		if err != nil {
			return s, err
		}
		s.DB = db
	}
	return s, nil
}

func payEventID(orderID string) string      { return "evt-" + orderID }
func latePayEventID(orderID string) string  { return "evt-late-" + orderID }
func wrongPayEventID(orderID string) string { return "evt-wrong-" + orderID }

// accepted records a 201: a new order, or one more answer naming an order already known.
func (r *Runner) accepted(o ordersaga.Order, key, userID string) (*OrderSnapshot, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if prev, ok := r.orders[o.OrderID]; ok {
		prev.KeyOrderIDs = append(prev.KeyOrderIDs, o.OrderID)
		return prev, false
	}
	snap := &OrderSnapshot{OrderID: o.OrderID, Key: key, UserID: userID, Lines: o.Lines, PayBy: o.PayBy,
		Action: r.action(len(r.order)), Status: o.Status, KeyOrderIDs: []string{o.OrderID}}
	// Another order for the same key (it must never happen) is linked both ways for the verdict.
	for _, id := range r.byKey[key] {
		other := r.orders[id]
		other.KeyOrderIDs = append(other.KeyOrderIDs, o.OrderID)
		snap.KeyOrderIDs = append(snap.KeyOrderIDs, other.OrderID)
	}
	r.byKey[key] = append(r.byKey[key], o.OrderID)
	r.orders[o.OrderID] = snap
	r.order = append(r.order, o.OrderID)
	if o.PayBy != nil && o.PayBy.After(r.lastPay) {
		r.lastPay = *o.PayBy
	}
	return snap, true
}

// action is what the k-th accepted order gets: the shares of the configuration, spread evenly over the
// sequence (golden-ratio steps), so that even a run with a handful of winners sees every kind of follow-up.
func (r *Runner) action(k int) string {
	_, u := math.Modf(float64(k+1) * 0.6180339887498949)
	switch {
	case u < r.cfg.PayRatio*r.cfg.WrongAmountShare/2:
		return ActionWrongThenPay
	case u < r.cfg.PayRatio*r.cfg.WrongAmountShare:
		return ActionWrongPay
	case u < r.cfg.PayRatio:
		return ActionPay
	case u < r.cfg.PayRatio+r.cfg.CancelRatio:
		return ActionCancel
	case u < r.cfg.PayRatio+r.cfg.CancelRatio+r.cfg.LatePayRatio:
		return ActionLatePay
	}
	return ActionExpire
}

func (r *Runner) setStatus(id string, s ordersaga.Status) {
	r.mu.Lock()
	if o, ok := r.orders[id]; ok {
		o.Status = s
	}
	r.mu.Unlock()
}
