// Package invariants checks the invariants I1–I4 of docs/design.md against the database and Redis. Tests and the
// reconciliation tests end every run with it (the flash-sale tool judges from outside, with the counts its
// report needs: flashsale/internal/sale).
//
// May import: the root package, internal/sqlstore and internal/redisstock (their reads) and the standard library; no third-party
// package, no database/sql, no net (checked by internal/layers).
package invariants
