// Package invariants checks DESIGN.md's invariants I1–I4 against the database and Redis. Tests, the
// reconciliation tests and the flash-sale tool end every run with it.
package invariants
