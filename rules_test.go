package ordersaga_test

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ordersaga/ordersaga"
)

// okLines are n valid distinct lines of qty each.
func okLines(n int, qty int64) []ordersaga.Line {
	out := make([]ordersaga.Line, n)
	for i := range out {
		out[i] = ordersaga.Line{SKU: fmt.Sprintf("SKU-%d", i), Qty: qty}
	}
	return out
}

// withLine is okLines(2, 1) with line i replaced.
func withLine(i int, l ordersaga.Line) []ordersaga.Line {
	out := okLines(2, 1)
	out[i] = l
	return out
}

func TestCheckLines(t *testing.T) {
	t.Parallel()
	name64 := strings.Repeat("S", 64)
	tests := []struct {
		name  string
		lines []ordersaga.Line
		// what NewOrderRules and StoredOrderRules find: the fault and the field ("" for none)
		newFault, storedFault ordersaga.LineFault
		newField, storedField string
	}{
		{"1_line", okLines(1, 1), 0, 0, "", ""},
		{"0_lines", nil, ordersaga.FaultCount, ordersaga.FaultCount, "lines", "lines"},
		{"20_lines", okLines(20, 1), 0, 0, "", ""},
		{"21_lines", okLines(21, 1), ordersaga.FaultCount, 0, "lines", ""},
		{"qty_1", withLine(1, ordersaga.Line{SKU: "B", Qty: 1}), 0, 0, "", ""},
		{"qty_0", withLine(1, ordersaga.Line{SKU: "B", Qty: 0}), ordersaga.FaultQty, ordersaga.FaultQty, "lines[1].qty", "lines[1].qty"},
		{"qty_negative", withLine(1, ordersaga.Line{SKU: "B", Qty: -1}), ordersaga.FaultQty, ordersaga.FaultQty, "lines[1].qty", "lines[1].qty"},
		{"qty_1000", okLines(2, 1000), 0, 0, "", ""},
		{"qty_1001", withLine(0, ordersaga.Line{SKU: "A", Qty: 1001}), ordersaga.FaultQty, 0, "lines[0].qty", ""},
		{"sku_of_1_char", withLine(0, ordersaga.Line{SKU: "A", Qty: 1}), 0, 0, "", ""},
		{"sku_empty", withLine(1, ordersaga.Line{SKU: "", Qty: 1}), ordersaga.FaultSKU, ordersaga.FaultSKU, "lines[1].sku", "lines[1].sku"},
		{"sku_of_64_chars", withLine(0, ordersaga.Line{SKU: name64, Qty: 1}), 0, 0, "", ""},
		{"sku_of_65_chars", withLine(0, ordersaga.Line{SKU: name64 + "S", Qty: 1}), ordersaga.FaultSKU, 0, "lines[0].sku", ""},
		{"sku_of_every_allowed_char", withLine(0, ordersaga.Line{SKU: "AZaz09-_.", Qty: 1}), 0, 0, "", ""},
		{"sku_with_space", withLine(0, ordersaga.Line{SKU: "SKU 1", Qty: 1}), ordersaga.FaultSKU, 0, "lines[0].sku", ""},
		{"sku_with_colon", withLine(0, ordersaga.Line{SKU: "SKU:1", Qty: 1}), ordersaga.FaultSKU, 0, "lines[0].sku", ""},
		{"sku_with_newline_at_end", withLine(0, ordersaga.Line{SKU: "SKU\n", Qty: 1}), ordersaga.FaultSKU, 0, "lines[0].sku", ""},
		{"distinct_skus", okLines(3, 1), 0, 0, "", ""},
		{"duplicate_sku", withLine(1, ordersaga.Line{SKU: "SKU-0", Qty: 2}), ordersaga.FaultDuplicate, ordersaga.FaultDuplicate, "lines[1].sku", "lines[1].sku"},
		{"bad_qty_before_duplicate", withLine(1, ordersaga.Line{SKU: "SKU-0", Qty: 0}), ordersaga.FaultQty, ordersaga.FaultQty, "lines[1].qty", "lines[1].qty"},
		{"bad_sku_before_bad_qty", withLine(1, ordersaga.Line{SKU: "", Qty: 0}), ordersaga.FaultSKU, ordersaga.FaultSKU, "lines[1].sku", "lines[1].sku"},
		{"first_bad_line_wins", []ordersaga.Line{{SKU: "A", Qty: 0}, {SKU: "", Qty: 1}}, ordersaga.FaultQty, ordersaga.FaultQty, "lines[0].qty", "lines[0].qty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for _, c := range []struct {
				rules ordersaga.LineRules
				which string
				fault ordersaga.LineFault
				field string
			}{
				{ordersaga.NewOrderRules, "new", tt.newFault, tt.newField},
				{ordersaga.StoredOrderRules, "stored", tt.storedFault, tt.storedField},
			} {
				p := c.rules.CheckLines(tt.lines)
				if c.fault == 0 {
					if p != nil {
						t.Errorf("%s rules: %+v (%s), want no fault", c.which, *p, p.Field())
					}
					continue
				}
				if p == nil {
					t.Errorf("%s rules: no fault, want %d on %s", c.which, c.fault, c.field)
					continue
				}
				if p.Fault != c.fault || p.Field() != c.field || p.Count != len(tt.lines) {
					t.Errorf("%s rules: %+v on %s, want fault %d on %s (count %d)", c.which, *p, p.Field(), c.fault, c.field, len(tt.lines))
				}
			}
		})
	}
}

func TestValidNameAndOrderID(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		s             string
		name, orderID bool
	}{
		{"", false, false},
		{"a", true, true},
		{"AZaz09-_.", true, true},
		{strings.Repeat("u", 64), true, true},
		{strings.Repeat("u", 65), false, false},
		{"u:1", false, true},
		{"u 1", false, false},
		{"u/1", false, false},
		{"é", false, false},
		{"u\n", false, false},
	} {
		if got := ordersaga.ValidName(tt.s); got != tt.name {
			t.Errorf("ValidName(%q) = %v, want %v", tt.s, got, tt.name)
		}
		if got := ordersaga.ValidOrderID(tt.s); got != tt.orderID {
			t.Errorf("ValidOrderID(%q) = %v, want %v", tt.s, got, tt.orderID)
		}
	}
}

// TestCharsetsAreTheDocumentedPatterns: the names' checks (tables of bytes) accept exactly what the patterns
// of docs/http-api.md match: every byte alone, after a valid byte and before one, and at the lengths around
// the limit.
func TestCharsetsAreTheDocumentedPatterns(t *testing.T) {
	t.Parallel()
	name := regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)
	orderID := regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,64}$`)
	var cases []string
	for b := range 256 {
		c := string([]byte{byte(b)})
		cases = append(cases, c, "a"+c, c+"z", strings.Repeat("u", 63)+c, strings.Repeat("u", 64)+c)
	}
	cases = append(cases, "", "é", "aé", strings.Repeat("é", 10))
	for _, s := range cases {
		if got, want := ordersaga.ValidName(s), name.MatchString(s); got != want {
			t.Errorf("ValidName(%q) = %v, the pattern says %v", s, got, want)
		}
		if got, want := ordersaga.ValidOrderID(s), orderID.MatchString(s); got != want {
			t.Errorf("ValidOrderID(%q) = %v, the pattern says %v", s, got, want)
		}
	}
	key := ordersaga.NewCharset("_.:-")
	for _, tt := range []struct {
		s    string
		want bool
	}{{strings.Repeat("k", 255), true}, {strings.Repeat("k", 256), false}, {"k:1.a_b-c", true}, {"k/1", false}} {
		if got := key.Holds(tt.s, 255); got != tt.want {
			t.Errorf("Holds(%q, 255) = %v, want %v", clip(tt.s), got, tt.want)
		}
	}
}

func clip(s string) string {
	if len(s) > 20 {
		return s[:20] + "…"
	}
	return s
}

func TestRejectReasonRoundTrip(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		r    ordersaga.RejectReason
		text string // the closed_reason as clients and stored rows have it
	}{
		{ordersaga.RejectReason{Kind: ordersaga.RejectSoldOut, SKU: "SKU-B"}, "sold out: SKU-B"},
		{ordersaga.RejectReason{Kind: ordersaga.RejectUnknownSKU, SKU: "SKU-B"}, "unknown sku: SKU-B"},
		{ordersaga.RejectReason{Kind: ordersaga.RejectFailed, Failure: "Compensated"}, "reservation failed: Compensated"},
		{ordersaga.RejectReason{Kind: ordersaga.RejectFailed, Failure: "timeout"}, "reservation failed: timeout"},
		{ordersaga.RejectReason{Kind: ordersaga.RejectFailed, Failure: "internal error"}, "reservation failed: internal error"},
		{ordersaga.RejectReason{Kind: ordersaga.RejectSoldOut, SKU: "a.b_c-D"}, "sold out: a.b_c-D"},
	} {
		if got := tt.r.String(); got != tt.text {
			t.Errorf("%+v.String() = %q, want %q", tt.r, got, tt.text)
		}
		back, ok := ordersaga.ParseRejectReason(tt.text)
		if !ok || back != tt.r {
			t.Errorf("ParseRejectReason(%q) = %+v, %v, want %+v, true", tt.text, back, ok, tt.r)
		}
	}
	// Other closed reasons are not rejections' and are not read as one.
	for _, s := range []string{"", "payment deadline passed", "cancelled", "closed by reconciliation: workflow TIMED_OUT",
		"sold out", "Sold out: X", "sold out:X", "reservation failed"} {
		if r, ok := ordersaga.ParseRejectReason(s); ok {
			t.Errorf("ParseRejectReason(%q) = %+v, true, want false", s, r)
		}
	}
}

// Amount is checked: a product or a sum past MaxAmountCents, or a negative qty or price, is ErrAmountOverflow,
// never an amount that wrapped (4 units at 2^62 cents were once 0 cents, 2 at 2^63−1 were −2).
func TestAmount(t *testing.T) {
	t.Parallel()
	const maxInt64 = int64(^uint64(0) >> 1)
	maxLine := ordersaga.Line{SKU: "A", Qty: ordersaga.MaxQty, UnitPriceCents: ordersaga.MaxPriceCents}
	largest := make([]ordersaga.Line, ordersaga.MaxLines)
	for i := range largest {
		largest[i] = maxLine
		largest[i].SKU = fmt.Sprintf("S%d", i)
	}
	for _, tc := range []struct {
		name  string
		lines []ordersaga.Line
		want  int64 // when ok
		ok    bool
	}{
		{"no_lines_is_0", nil, 0, true},
		{"two_lines", []ordersaga.Line{{SKU: "A", Qty: 2, UnitPriceCents: 999}, {SKU: "B", Qty: 1, UnitPriceCents: 1}}, 1999, true},
		{"largest_order_is_the_bound_exactly", largest, ordersaga.MaxAmountCents, true},
		{"one_cent_past_the_bound", append(append([]ordersaga.Line(nil), largest...), ordersaga.Line{SKU: "X", Qty: 1, UnitPriceCents: 1}), 0, false},
		{"4_units_at_2^62_wrap_to_0", []ordersaga.Line{{SKU: "A", Qty: 4, UnitPriceCents: 1 << 62}}, 0, false},
		{"2_units_at_max_int64_wrap_to_-2", []ordersaga.Line{{SKU: "A", Qty: 2, UnitPriceCents: maxInt64}}, 0, false},
		{"sum_of_two_lines_wraps", []ordersaga.Line{{SKU: "A", Qty: 1, UnitPriceCents: maxInt64}, {SKU: "B", Qty: 1, UnitPriceCents: 1}}, 0, false},
		{"one_line_past_the_bound", []ordersaga.Line{{SKU: "A", Qty: 1, UnitPriceCents: ordersaga.MaxAmountCents + 1}}, 0, false},
		{"negative_price", []ordersaga.Line{{SKU: "A", Qty: 1, UnitPriceCents: -1}}, 0, false},
		{"negative_qty", []ordersaga.Line{{SKU: "A", Qty: -1, UnitPriceCents: 1}}, 0, false},
	} {
		got, err := ordersaga.Amount(tc.lines)
		switch {
		case tc.ok && (err != nil || got != tc.want):
			t.Errorf("%s: Amount = %d, %v; want %d", tc.name, got, err, tc.want)
		case !tc.ok && (!errors.Is(err, ordersaga.ErrAmountOverflow) || got != 0):
			t.Errorf("%s: Amount = %d, %v; want 0 and ErrAmountOverflow", tc.name, got, err)
		}
	}
}

func TestCheckPrice(t *testing.T) {
	t.Parallel()
	bound := strconv.FormatInt(ordersaga.MaxPriceCents, 10)
	for _, tc := range []struct {
		cents int64
		ok    bool
	}{{0, true}, {1, true}, {ordersaga.MaxPriceCents, true}, {ordersaga.MaxPriceCents + 1, false}, {1 << 62, false}, {-1, false}} {
		err := ordersaga.CheckPrice("SKU-1", tc.cents)
		if (err == nil) != tc.ok {
			t.Errorf("CheckPrice(%d) = %v, want ok %v", tc.cents, err, tc.ok)
		}
		if err != nil && (!strings.Contains(err.Error(), "price_cents") || !strings.Contains(err.Error(), bound) || !strings.Contains(err.Error(), "SKU-1")) {
			t.Errorf("CheckPrice(%d) = %q: want the SKU, the field and the bound %s named", tc.cents, err, bound)
		}
	}
	// The bound leaves the largest order within MaxAmountCents.
	if ordersaga.MaxLines*ordersaga.MaxQty*ordersaga.MaxPriceCents != ordersaga.MaxAmountCents {
		t.Errorf("MaxAmountCents %d is not MaxLines × MaxQty × MaxPriceCents", ordersaga.MaxAmountCents)
	}
}

func TestCheckPayment(t *testing.T) {
	t.Parallel()
	const maxInt64 = int64(^uint64(0) >> 1)
	type pay struct {
		event, order string
		cents        int64
		currency     string
	}
	ok := pay{"evt-1", "o-1", 1998, "CNY"}
	with := func(f func(*pay)) pay { p := ok; f(&p); return p }
	for _, tc := range []struct {
		name  string
		p     pay
		field string // "" when valid
	}{
		{"valid", ok, ""},
		{"amount_0", with(func(p *pay) { p.cents = 0 }), ""},
		{"amount_at_the_bound", with(func(p *pay) { p.cents = ordersaga.MaxAmountCents }), ""},
		{"amount_past_the_bound", with(func(p *pay) { p.cents = ordersaga.MaxAmountCents + 1 }), "amount_cents"},
		{"amount_max_int64", with(func(p *pay) { p.cents = maxInt64 }), "amount_cents"},
		{"amount_negative", with(func(p *pay) { p.cents = -1 }), "amount_cents"},
		{"event_empty", with(func(p *pay) { p.event = "" }), "event_id"},
		{"event_space", with(func(p *pay) { p.event = "evt 1" }), "event_id"},
		{"event_255", with(func(p *pay) { p.event = strings.Repeat("e", 255) }), ""},
		{"event_256", with(func(p *pay) { p.event = strings.Repeat("e", 256) }), "event_id"},
		{"order_64", with(func(p *pay) { p.order = strings.Repeat("o", 64) }), ""},
		{"order_65", with(func(p *pay) { p.order = strings.Repeat("o", 65) }), "order_id"},
		{"currency_lower", with(func(p *pay) { p.currency = "cny" }), "currency"},
		{"currency_4", with(func(p *pay) { p.currency = "CNYY" }), "currency"},
	} {
		got := ordersaga.CheckPayment(tc.p.event, tc.p.order, tc.p.cents, tc.p.currency)
		switch {
		case tc.field == "" && got != nil:
			t.Errorf("%s: %v, want valid", tc.name, got)
		case tc.field != "" && (got == nil || got.Field != tc.field || got.Want == ""):
			t.Errorf("%s: %+v, want field %s", tc.name, got, tc.field)
		case tc.field == "amount_cents" && !strings.Contains(got.Want, strconv.FormatInt(ordersaga.MaxAmountCents, 10)):
			t.Errorf("%s: %q does not name the bound %d", tc.name, got.Want, ordersaga.MaxAmountCents)
		}
	}
}
