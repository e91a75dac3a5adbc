// Package orderledger is the rule of what one order line's ledger rows may hold, given its order's status:
// the units its deduct took (Σ DEDUCT) and its compensation gave back (Σ RESTORE). Each line is taken at
// most once and given back at most once, and what it keeps (taken − given back) is what its status says. The
// schema's UNIQUE (order_id, sku, op) already refuses a second DEDUCT or RESTORE row; this rule judges the
// units, so it fails when a single row takes or gives back too much. internal/invariants applies it to the
// store, the flash-sale tool (flashsale/internal/sale) to its database snapshot.
//
// May import: the root package and the standard library (no I/O): the flash-sale tool imports it without
// linking the stores (checked by internal/layers).
package orderledger
