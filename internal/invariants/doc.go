// Package invariants checks the invariants I1–I4 of docs/design.md against the database and Redis. Tests, the
// reconciliation tests and the flash-sale tool end every run with it.
//
// May import: the root package, activities (which reads the stores) and the standard library; no third-party
// package, no database/sql, no net (checked by internal/layers).
package invariants
