package sale

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// ReadReport loads the report.json of a run from dir.
func ReadReport(dir string) (*Report, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		return nil, fmt.Errorf("read report: %w", err)
	}
	var rep Report
	if err := json.Unmarshal(raw, &rep); err != nil {
		return nil, fmt.Errorf("read report %s: %w", dir, err)
	}
	if len(rep.SKUs) == 0 || len(rep.Snapshot.SKUs) == 0 {
		return nil, fmt.Errorf("read report %s: no SKUs or snapshot (a report of an older flashsale?)", dir)
	}
	return &rep, nil
}

// Rejudge takes the verdict of a finished run again, when the stack has had time to settle (an overloaded
// stack can take longer than --quiet-timeout to drain): it reads the run's SKUs and every order that was not
// final anew from the API at cfg.Target, and the database when cfg (or opts.DB) names one, and judges the
// same orders and payments again. Only cfg.Target, cfg.Grace, the database, cfg.RequestTimeout and the
// refund provider's cfg.ProviderURL (--provider) and cfg.ProviderCheck (--provider-check) are used. The order
// requests are judged as the run logged them: they are history, not state.
func Rejudge(ctx context.Context, cfg Config, opts Options, rep *Report) (*Report, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	r := &Runner{
		cfg:      cfg,
		opts:     opts,
		c:        NewClient(cfg.Target, "", "", 64, cfg.RequestTimeout),
		skus:     rep.SKUs,
		httpSem:  make(chan struct{}, 64),
		orders:   map[string]*OrderSnapshot{},
		byKey:    map[string][]string{},
		payments: map[string]*PaymentSnapshot{},
		stats:    NewStats(opts.Now()),
	}
	defer r.c.Close()
	r.cfg.Stock, r.cfg.PerUserLimit = rep.Snapshot.SKUs[0].Initial, rep.Snapshot.SKUs[0].PerUserLimit
	r.startAvail = make(map[string]*int64, len(rep.Snapshot.SKUs))
	for _, sku := range rep.Snapshot.SKUs {
		r.startAvail[sku.SKU] = sku.StartAvailable
	}
	for i := range rep.Snapshot.Orders {
		o := rep.Snapshot.Orders[i]
		r.orders[o.OrderID] = &o
		r.order = append(r.order, o.OrderID)
	}
	for i := range rep.Snapshot.Payments {
		p := rep.Snapshot.Payments[i]
		r.payments[p.EventID] = &p
	}
	r.unknown = rep.Snapshot.UnknownOutcomes
	closeDB, err := r.openDB(ctx)
	if err != nil {
		return nil, err
	}
	defer closeDB()
	open := r.pollOpen(ctx, true)
	_, holds := r.pollInventory(ctx)
	var dbOpen int64
	if r.db != nil {
		var err error
		if dbOpen, err = r.db.OpenOrders(ctx, r.skus); err != nil {
			return nil, err
		}
	}
	checkProvider, skipped, err := r.awaitProvider(ctx)
	if err != nil {
		return nil, err
	}
	snap, err := r.snapshot(ctx, open == 0 && holds == 0 && dbOpen == 0)
	if err != nil {
		return nil, err
	}
	if err := r.readProvider(ctx, &snap, checkProvider, skipped); err != nil {
		return nil, err
	}
	snap.Places = rep.Snapshot.Places // the run's requests, as they were sent and answered
	snap.Buyers = rep.Snapshot.Buyers // and its buyers' visits
	out := *rep
	out.Snapshot, out.Final, out.Verdict = snap, snap.SKUs, Check(snap)
	out.Rejudged = opts.Now().UTC()
	out.tally()
	return &out, nil
}
