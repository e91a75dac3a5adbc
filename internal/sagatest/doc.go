// Package sagatest starts what an end-to-end test of the saga needs: the in-process Temporal server
// (temporaltest) with the order search attributes, the test's own stores (real or embedded, see testenv)
// and an order worker.
//
// May import: activities, workflows, internal/platform, internal/testenv, the stores' packages, the Temporal
// SDK and temporaltest, and the standard library (testing included). Only _test.go files may import this
// package (checked by internal/layers).
package sagatest
