// Package e2e holds the end-to-end tests of the saga: the in-process Temporal server, a worker and the
// real stores (or the embedded ones), driven like the API drives them.
//
// Test-only: this file imports nothing; the tests may import any library package of the module (checked by
// internal/layers).
package e2e
