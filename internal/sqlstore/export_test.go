package sqlstore

import (
	"context"

	"github.com/ordersaga/ordersaga"
)

// ErrRetryTx marks a transaction that lost a deadlock or a lock wait past the store's own retries.
var ErrRetryTx = errRetryTx

// DeductAsOneBatch runs single-line deducts of one SKU as one batch of the group commit, in the order given
// (arrival order), exactly as the SKU's runner runs what it took from the queue, and returns each outcome.
func (s *Store) DeductAsOneBatch(ctx context.Context, ins ...ordersaga.DeductInput) ([]ordersaga.DeductResult, []error) {
	if s.group == nil {
		s.SetDeductBatch(DefaultDeductBatch)
	}
	batch := make([]*deductReq, len(ins))
	for i, in := range ins {
		if err := ordersaga.CheckStored("deduct", in.OrderID, in.Lines); err != nil || len(in.Lines) != 1 {
			panic("DeductAsOneBatch takes valid single-line deducts")
		}
		batch[i] = &deductReq{ctx: ctx, in: in, done: make(chan deductOutcome, 1)}
	}
	s.group.runBatch(batch)
	res := make([]ordersaga.DeductResult, len(ins))
	errs := make([]error, len(ins))
	for i, r := range batch {
		o := <-r.done
		res[i], errs[i] = o.res, o.err
	}
	return res, errs
}
