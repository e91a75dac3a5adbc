//go:build race

package testenv

// RaceEnabled says the test binary runs under the race detector, which slows the in-process Temporal server
// several-fold: the tests that place many orders place fewer then (Scaled).
const RaceEnabled = true
