package sqlstore_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
)

// A refund is marked sent only with the provider's reference: an empty or blank one is refused, naming the
// field, and the refund stays in the outbox, unsent. An unknown event or a payment that is not a refund fails
// as it does with a reference.
func TestMarkRefundSent_RefusesAnEmptyReference(t *testing.T) {
	t.Parallel()
	store, _ := refundStore(t)
	putRefund(t, store, "rs-noref", 500)
	putApplied(t, store, "rs-applied")
	for _, ref := range []string{"", "  "} {
		e, err := store.MarkRefundSent(t.Context(), "rs-noref", ref)
		if !errors.Is(err, sqlstore.ErrRefundRefEmpty) || !strings.Contains(err.Error(), "refund_ref") ||
			!strings.Contains(err.Error(), "rs-noref") || e.RefundSentAt != nil {
			t.Errorf("MarkRefundSent(ref %q) = %+v, %v; want ErrRefundRefEmpty naming refund_ref and the event, not sent", ref, e, err)
		}
	}
	checkOutbox(t, store, []string{"rs-noref"}, 0)
	if _, err := store.MarkRefundSent(t.Context(), "rs-nobody", ""); !errors.Is(err, ordersaga.ErrNotFound) {
		t.Errorf("MarkRefundSent(unknown, no ref) = %v, want ErrNotFound", err)
	}
	if _, err := store.MarkRefundSent(t.Context(), "rs-applied", ""); !errors.Is(err, sqlstore.ErrNotARefund) {
		t.Errorf("MarkRefundSent(applied, no ref) = %v, want ErrNotARefund", err)
	}
	if e := mustSend(t, store, "rs-noref", "ref-1"); e.RefundSentAt == nil || e.RefundRef != "ref-1" {
		t.Errorf("MarkRefundSent with a reference = %+v, want sent as ref-1", e)
	}
	checkOutbox(t, store, nil, 0)
}
