// Package invariants checks the invariants I1–I4 of docs/design.md against the database and Redis. Tests, the
// reconciliation tests and the flash-sale tool end every run with it.
package invariants
