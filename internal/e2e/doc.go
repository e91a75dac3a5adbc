// Package e2e holds the end-to-end tests of the saga: the in-process Temporal server, a worker and the
// real stores (or the embedded ones), driven like the API drives them.
package e2e
