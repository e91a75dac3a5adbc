// Package sagatest starts what an end-to-end test of the saga needs: the in-process Temporal server
// (temporaltest) with the order search attributes, the test's own stores (real or embedded, see testenv)
// and an order worker.
package sagatest
