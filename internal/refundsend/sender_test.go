package refundsend_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/refunds"
	"github.com/ordersaga/ordersaga/internal/refundsend"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

// providerFunc is a provider that answers what the test says: a broken or refusing provider.
type providerFunc func(refunds.Refund) (refunds.Receipt, error)

func (f providerFunc) Send(_ context.Context, r refunds.Refund) (refunds.Receipt, error) { return f(r) }

func record(t *testing.T, store *sqlstore.Store, result ordersaga.PaymentResult) refundsend.Pending {
	t.Helper()
	id := "snd-" + testenv.RandomID(8)
	if _, _, err := store.RecordPayment(context.Background(), ordersaga.PaymentRecord{EventID: id, OrderID: id + "-o",
		AmountCents: 1998, Currency: "CNY", Result: result}); err != nil {
		t.Fatal(err)
	}
	rows, err := store.PaymentsOfOrder(context.Background(), id+"-o")
	if err != nil || len(rows) != 1 {
		t.Fatalf("payments of %s: %v %v", id, rows, err)
	}
	return refundsend.Pending{ID: rows[0].ID, Refund: refunds.Refund{EventID: id, OrderID: id + "-o", AmountCents: 1998, Currency: "CNY"}}
}

func row(t *testing.T, store *sqlstore.Store, p refundsend.Pending) sqlstore.PaymentEntry {
	t.Helper()
	rows, err := store.PaymentsOfOrder(context.Background(), p.OrderID)
	if err != nil || len(rows) != 1 {
		t.Fatalf("payments of %s: %v %v", p.OrderID, rows, err)
	}
	return rows[0]
}

// TestSend_RecordsOnlyWhatTheProviderAnswered: a receipt marks the refund sent with the provider's
// reference; a permanent refusal records the refusal and takes the refund out of the outbox; a failure, or a
// receipt without a reference, leaves the refund in the outbox untouched, to be sent again.
func TestSend_RecordsOnlyWhatTheProviderAnswered(t *testing.T) {
	t.Parallel()
	store := testenv.MustOpenStore(t)
	ctx := context.Background()
	send := func(f providerFunc, p refundsend.Pending) (refundsend.Outcome, error) {
		s := &refundsend.Sender{Outbox: store, Provider: f}
		return s.Send(ctx, p)
	}

	ok := record(t, store, ordersaga.PaymentRefunded)
	out, err := send(func(r refunds.Refund) (refunds.Receipt, error) {
		if r != ok.Refund {
			t.Errorf("the provider got %+v, want %+v", r, ok.Refund)
		}
		return refunds.Receipt{Ref: "re_1", Replayed: true}, nil
	}, ok)
	if err != nil || out.Ref != "re_1" || !out.Replayed || out.Refused {
		t.Fatalf("sent: %+v, %v", out, err)
	}
	if e := row(t, store, ok); e.RefundSentAt == nil || e.RefundRef != "re_1" {
		t.Errorf("the row after a receipt: sent %v ref %q", e.RefundSentAt, e.RefundRef)
	}

	refused := record(t, store, ordersaga.PaymentRejectedAmount)
	out, err = send(func(refunds.Refund) (refunds.Receipt, error) {
		return refunds.Receipt{}, &refunds.RefusedError{Code: "refused", Reason: "card closed"}
	}, refused)
	if err != nil || !out.Refused || out.Code != "refused" {
		t.Fatalf("refused: %+v, %v", out, err)
	}
	if e := row(t, store, refused); e.RefundRefusedAt == nil || !strings.Contains(e.RefundRefusal, "card closed") || e.RefundSentAt != nil {
		t.Errorf("the row after a refusal: refused %v (%q), sent %v", e.RefundRefusedAt, e.RefundRefusal, e.RefundSentAt)
	}

	for name, f := range map[string]providerFunc{
		"unreachable": func(refunds.Refund) (refunds.Receipt, error) {
			return refunds.Receipt{}, errors.New("connection refused")
		},
		"no reference": func(refunds.Refund) (refunds.Receipt, error) { return refunds.Receipt{}, nil },
	} {
		p := record(t, store, ordersaga.PaymentRefunded)
		if out, err := send(f, p); err == nil {
			t.Errorf("%s: %+v without an error: the refund would leave the outbox unsent", name, out)
		}
		if e := row(t, store, p); e.RefundSentAt != nil || e.RefundRefusedAt != nil {
			t.Errorf("%s: the row was marked (sent %v, refused %v)", name, e.RefundSentAt, e.RefundRefusedAt)
		}
		page, err := (&refundsend.Sender{Outbox: store}).Page(ctx, p.ID-1, 1)
		if err != nil || len(page) != 1 || page[0] != p {
			t.Errorf("%s: the outbox's page %+v (%v), want the refund still there", name, page, err)
		}
	}
}
