//go:build race

package reconcile_test

// raceEnabled: the race detector slows the in-process Temporal server several-fold, so the load tests
// place fewer orders by default (RECONCILE_LOAD_ORDERS overrides).
const raceEnabled = true
