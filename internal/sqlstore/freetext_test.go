package sqlstore_test

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

// freeTextColumn writes text to one bounded free-text column through the store and reads back what was stored.
type freeTextColumn struct {
	name  string
	chars int // the column's width in characters
	write func(t *testing.T, store *sqlstore.Store, id, text string) string
}

var freeTextColumns = []freeTextColumn{
	{"orders.closed_reason", 255, func(t *testing.T, store *sqlstore.Store, id, text string) string {
		rec, err := store.CloseOrder(t.Context(), ordersaga.OrderRecord{OrderID: id, UserID: "u1",
			Status: ordersaga.StatusRejected, Currency: "EUR", ClosedReason: text, Lines: []ordersaga.Line{line("A", 1)}})
		mustWrite(t, "CloseOrder", err)
		return rec.ClosedReason
	}},
	{"payments.detail", 255, func(t *testing.T, store *sqlstore.Store, id, text string) string {
		p, _, err := store.RecordPayment(t.Context(), ordersaga.PaymentRecord{EventID: id, OrderID: id, AmountCents: 1,
			Currency: "EUR", Result: ordersaga.PaymentRefunded, Detail: text})
		mustWrite(t, "RecordPayment", err)
		return p.Detail
	}},
	{"payments.refund_ref", 255, func(t *testing.T, store *sqlstore.Store, id, text string) string {
		_, _, err := store.RecordPayment(t.Context(), ordersaga.PaymentRecord{EventID: id, OrderID: id, AmountCents: 1,
			Currency: "EUR", Result: ordersaga.PaymentRefunded})
		mustWrite(t, "RecordPayment", err)
		e, err := store.MarkRefundSent(t.Context(), id, text)
		mustWrite(t, "MarkRefundSent", err)
		return e.RefundRef
	}},
	{"stock_anomalies.detail", 512, func(t *testing.T, store *sqlstore.Store, id, text string) string {
		err := store.RecordAnomalies(t.Context(), []sqlstore.Anomaly{{RunID: id, SKU: "A", Kind: "drift", Action: "none", Detail: text}})
		mustWrite(t, "RecordAnomalies", err)
		rows, err := store.Anomalies(t.Context(), id)
		if err != nil || len(rows) != 1 {
			t.Fatalf("anomalies of run %s: %d rows, %v; want 1", id, len(rows), err)
		}
		return rows[0].Detail
	}},
	{"money_anomalies.subject", 255, func(t *testing.T, store *sqlstore.Store, id, text string) string {
		return moneyFinding(t, store, id, sqlstore.MoneyFinding{Subject: text, Detail: "d"}).Subject
	}},
	{"money_anomalies.detail", 512, func(t *testing.T, store *sqlstore.Store, id, text string) string {
		return moneyFinding(t, store, id, sqlstore.MoneyFinding{Subject: id, Detail: text}).Detail
	}},
}

func mustWrite(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// moneyFinding records f on a day of its own (id's) and reads it back.
func moneyFinding(t *testing.T, store *sqlstore.Store, id string, f sqlstore.MoneyFinding) sqlstore.MoneyFinding {
	t.Helper()
	day := strings.TrimPrefix(id, "f")
	f.Kind, f.Day = "test", day
	_, err := store.RecordMoneyFindings(t.Context(), id, []sqlstore.MoneyFinding{f})
	mustWrite(t, "RecordMoneyFindings", err)
	rows, err := store.MoneyAnomalies(t.Context(), day)
	if err != nil || len(rows) != 1 {
		t.Fatalf("money anomalies of %s: %d rows, %v; want 1", day, len(rows), err)
	}
	return rows[0].MoneyFinding
}

// TestFreeText_StoredValidAndBounded: every free text the store writes to a bounded column is stored, whatever
// it holds: cut to the column's width on a character boundary, and valid UTF-8 (an invalid byte is replaced).
// On a strict-mode MySQL a text too long (1406) or not UTF-8 (1366, "Incorrect string value") fails its
// statement, for ever on every retry.
func TestFreeText_StoredValidAndBounded(t *testing.T) {
	t.Parallel()
	store := testenv.MustOpenStoreWith(t, testenv.Item{SKU: "A", Stock: 10, Price: 100})
	texts := []struct {
		name, text, keeps string // keeps: the valid prefix the stored text must start with
	}{
		{"long", "failed: " + strings.Repeat("S", 64) + ": " + strings.Repeat("é", 600), "failed: " + strings.Repeat("S", 64) + ": éé"},
		{"invalid_utf8", "ref \xff\xfe from the provider", "ref "},
		{"long_invalid_utf8", "bad \xc3" + strings.Repeat("€", 600) + "\xff", "bad "},
	}
	n := 0
	for _, col := range freeTextColumns {
		for _, tx := range texts {
			n++
			id := fmt.Sprintf("f2030-01-%02d", n) // an order, event and run ID, and a day for the money findings
			t.Run(col.name+"/"+tx.name, func(t *testing.T) {
				got := col.write(t, store, id, tx.text)
				if !utf8.ValidString(got) || utf8.RuneCountInString(got) > col.chars || !strings.HasPrefix(got, tx.keeps) {
					t.Errorf("stored %q (%d characters, valid UTF-8 %v); want valid UTF-8 of at most %d characters starting %q",
						got, utf8.RuneCountInString(got), utf8.ValidString(got), col.chars, tx.keeps)
				}
			})
		}
	}
}
