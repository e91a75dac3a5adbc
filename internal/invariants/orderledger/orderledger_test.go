package orderledger

import (
	"testing"

	"github.com/ordersaga/ordersaga"
)

func TestCheck(t *testing.T) {
	const (
		paid      = ordersaga.StatusPaid
		awaiting  = ordersaga.StatusAwaitingPayment
		cancelled = ordersaga.StatusCancelled
		expired   = ordersaga.StatusExpired
		rejected  = ordersaga.StatusRejected
		reserving = ordersaga.StatusReserving
	)
	for _, c := range []struct {
		name string
		line Line
		want Fault
	}{
		{"PAID: all taken, none given back", Line{paid, 2, 2, 0}, None},
		{"CANCELLED: taken and given back", Line{cancelled, 2, 2, 2}, None},
		{"EXPIRED: never taken (a tombstone)", Line{expired, 2, 0, 0}, None},
		{"REJECTED: never taken", Line{rejected, 1, 0, 0}, None},
		{"AWAITING_PAYMENT: all taken", Line{awaiting, 2, 2, 0}, None},
		{"AWAITING_PAYMENT: compensated, close not recorded yet", Line{awaiting, 2, 2, 2}, None},
		{"RESERVING: nothing taken yet", Line{reserving, 2, 0, 0}, None},
		{"no order line: a tombstone", Line{NoOrder, 0, 0, 0}, None},

		{"PAID taken twice", Line{paid, 2, 4, 0}, Twice},
		{"PAID taken twice, given back once: keeps the right units", Line{paid, 2, 4, 2}, Twice},
		{"CANCELLED given back twice", Line{cancelled, 2, 2, 4}, Twice},
		{"EXPIRED given back what was never taken", Line{expired, 2, 0, 2}, Twice},
		{"AWAITING_PAYMENT taken twice", Line{awaiting, 1, 2, 0}, Twice},
		{"no order line given back units", Line{NoOrder, 0, 0, 1}, Twice},
		{"negative units", Line{paid, 2, 2, -1}, Twice},

		{"PAID given back", Line{paid, 2, 2, 2}, Status},
		{"PAID never taken", Line{paid, 2, 0, 0}, Status},
		{"PAID partly taken", Line{paid, 3, 1, 0}, Status},
		{"CANCELLED not given back", Line{cancelled, 2, 2, 0}, Status},
		{"EXPIRED not given back", Line{expired, 1, 1, 0}, Status},
		{"REJECTED keeps units", Line{rejected, 1, 1, 0}, Status},
		{"CANCELLED partly given back", Line{cancelled, 2, 2, 1}, Status},
		{"AWAITING_PAYMENT not taken", Line{awaiting, 2, 0, 0}, Status},
		{"units taken by no order line", Line{NoOrder, 0, 1, 0}, Status},
		{"unknown status", Line{"SHIPPED", 1, 1, 0}, Status},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := Check(c.line)
			got := None
			if p != nil {
				got = p.Fault
				if p.Text == "" {
					t.Error("a problem without words")
				}
			}
			if got != c.want {
				t.Errorf("Check(%+v) = %+v, want fault %d", c.line, p, c.want)
			}
		})
	}
}
