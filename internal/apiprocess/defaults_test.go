package apiprocess_test

import (
	"testing"

	"github.com/ordersaga/ordersaga/internal/api"
	"github.com/ordersaga/ordersaga/internal/config"
	"github.com/ordersaga/ordersaga/internal/placement"
)

// TestConfigDefaultsAreThePlacementService: the configuration (standard library only) spells the order
// API's placement bounds and retention out again; an unset variable must mean the placement service's own
// default, the figure its comment and BENCHMARKS.md argue for.
func TestConfigDefaultsAreThePlacementService(t *testing.T) {
	t.Parallel()
	c, err := config.FromEnv(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if c.PlaceConcurrency != placement.DefaultMaxPlacing {
		t.Errorf("PLACE_CONCURRENCY defaults to %d, the placement service to %d", c.PlaceConcurrency, placement.DefaultMaxPlacing)
	}
	if c.PlacePerSKU != api.DefaultPlacePerSKU || c.LineGrace != api.DefaultLineGrace {
		t.Errorf("PLACE_PER_SKU and LINE_GRACE default to %d and %s, the line to %d and %s", c.PlacePerSKU, c.LineGrace, api.DefaultPlacePerSKU, api.DefaultLineGrace)
	}
	if c.IdempotencyRetention != placement.DefaultRetention {
		t.Errorf("IDEMPOTENCY_RETENTION defaults to %s, the placement service to %s", c.IdempotencyRetention, placement.DefaultRetention)
	}
}
