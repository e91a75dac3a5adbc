// Package refundsimtest runs the refund provider simulator as `paysim serve` in a child process, for tests
// that talk to a provider in another process the way the worker does.
//
// May import: the standard library only (it runs paysim, it does not link it). Imported from _test.go files only.
package refundsimtest
