package sale

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/ordersaga/ordersaga"
)

// UserLimitTotals is the per-user limit as one source saw it: the units of a SKU each user holds (its
// RESERVING, AWAITING_PAYMENT and PAID orders), over every (user, SKU) pair with a limit.
type UserLimitTotals struct {
	Source string `json:"source"`
	// Limit is the largest per-user limit of the run's SKUs (they all get the same, --per-user-limit).
	Limit int64 `json:"limit"`
	// Holders is the number of (user, SKU) pairs holding at least one unit; MaxUnits the most units one
	// user holds of one SKU; AtLimit the pairs holding exactly the limit, OverLimit those holding more.
	Holders   int   `json:"holders"`
	MaxUnits  int64 `json:"max_units"`
	AtLimit   int   `json:"at_limit"`
	OverLimit int   `json:"over_limit"`
}

// text is the totals in one line.
func (u UserLimitTotals) text() string {
	return fmt.Sprintf("%d: most units one user holds of a SKU %d; users at the limit %d, over it %d (of %d holding any)",
		u.Limit, u.MaxUnits, u.AtLimit, u.OverLimit, u.Holders)
}

// holding is the units one user holds of one SKU, and the orders that hold them.
type holding struct {
	units  int64
	orders []string
}

// holdStatuses are the statuses whose units count against the per-user limit (docs/http-api.md): cancelled,
// expired and rejected orders free theirs.
var holdStatuses = []ordersaga.Status{ordersaga.StatusReserving, ordersaga.StatusAwaitingPayment, ordersaga.StatusPaid}

// checkUserLimit judges the per-user limit from one source's orders: held maps (user, SKU) to what the user
// holds. It adds the source's totals; nothing when no SKU of the run has a limit.
func checkUserLimit(j *judge, s Snapshot, source string, held map[[2]string]*holding) {
	limits := map[string]int64{}
	var most int64
	for _, sku := range s.SKUs {
		if sku.PerUserLimit > 0 {
			limits[sku.SKU] = sku.PerUserLimit
			most = max(most, sku.PerUserLimit)
		}
	}
	if len(limits) == 0 {
		return
	}
	t := UserLimitTotals{Source: source, Limit: most}
	keys := slices.SortedFunc(maps.Keys(held), func(a, b [2]string) int {
		if c := strings.Compare(a[1], b[1]); c != 0 {
			return c
		}
		return strings.Compare(a[0], b[0])
	})
	for _, k := range keys {
		user, sku, h := k[0], k[1], held[k]
		limit, ok := limits[sku]
		if !ok || h.units <= 0 {
			continue
		}
		t.Holders++
		t.MaxUnits = max(t.MaxUnits, h.units)
		switch {
		case h.units == limit:
			t.AtLimit++
		case h.units > limit:
			t.OverLimit++
			j.bad(Finding{Check: CheckOverLimit, Source: source, SKU: sku, UserID: user, N: h.units - limit,
				Detail: fmt.Sprintf("holds %d units > per-user limit %d (orders %v)", h.units, limit, h.orders)})
		}
	}
	j.v.UserLimits = append(j.v.UserLimits, t)
}

// holdings sums, per (user, SKU), the units of the orders in holdStatuses.
func holdings[O any](orders []O, user func(O) string, status func(O) ordersaga.Status, id func(O) string, lines func(O) []ordersaga.Line) map[[2]string]*holding {
	out := map[[2]string]*holding{}
	for _, o := range orders {
		if !slices.Contains(holdStatuses, status(o)) {
			continue
		}
		for _, l := range lines(o) {
			k := [2]string{user(o), l.SKU}
			h := out[k]
			if h == nil {
				h = &holding{}
				out[k] = h
			}
			h.units += l.Qty
			h.orders = append(h.orders, id(o))
		}
	}
	return out
}
