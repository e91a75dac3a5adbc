package main

import (
	"context"
	"fmt"

	"github.com/ordersaga/ordersaga/internal/reconcile"
	"github.com/ordersaga/ordersaga/internal/redisstock"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
)

// demoSKU is one SKU the stack creates on an empty inventory.
type demoSKU struct {
	SKU        string
	Stock      int64
	PriceCents int64
}

// demoSKUs are priced so that the API's example (2 × SKU-1) costs 1998; FLASH-1 sells out quickly.
var demoSKUs = []demoSKU{
	{SKU: "SKU-1", Stock: 100, PriceCents: 999},
	{SKU: "SKU-2", Stock: 50, PriceCents: 4999},
	{SKU: "FLASH-1", Stock: 10, PriceCents: 100},
}

type inventoryRow struct {
	SKU        string
	Stock      int64
	PriceCents int64
}

func listInventory(ctx context.Context, store *sqlstore.Store) ([]inventoryRow, error) {
	var rows []inventoryRow
	if err := store.DB().WithContext(ctx).Raw("SELECT sku, stock, price_cents FROM inventory ORDER BY sku").Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("list inventory: %w", err)
	}
	return rows, nil
}

// prepareInventory loads into Redis every SKU it does not know (a fresh embedded Redis knows none; a missing
// counter fails closed, so nothing could be sold), then creates the demo SKUs if the inventory is empty. It
// returns the SKUs it created.
func prepareInventory(ctx context.Context, store *sqlstore.Store, rs *redisstock.Store, demo bool) ([]demoSKU, error) {
	rows, err := listInventory(ctx, store)
	if err != nil {
		return nil, err
	}
	for _, row := range rows {
		_, loaded, err := rs.Available(ctx, row.SKU)
		if err != nil {
			return nil, err
		}
		if loaded {
			continue
		}
		// What the reconciliation would set, every shard of a split SKU too (the loads' rule, under the row's lock).
		if err := reconcile.LoadStock(ctx, store, rs, row.SKU); err != nil {
			return nil, err
		}
	}
	if len(rows) > 0 || !demo {
		return nil, nil
	}
	for _, d := range demoSKUs {
		if _, err := reconcile.SetStock(ctx, store, rs, sqlstore.InventorySpec{SKU: d.SKU, Stock: d.Stock, PriceCents: d.PriceCents}); err != nil {
			return nil, fmt.Errorf("demo sku: %w", err)
		}
	}
	return demoSKUs, nil
}
