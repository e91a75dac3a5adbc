// Package refundsim is the payment provider's refund API played locally (`paysim serve`): it answers
// POST /v1/refunds by the wire contract of internal/refunds (signature, idempotency key, replays, refusals),
// keeps the refunds it executed in memory, injects faults (failures, lost answers, refusals, a blackhole),
// and reports what it executed, so a test or a chaos run can check each refund reached it exactly once.
//
// May import: the standard library, internal/refunds (the contract and its types) and internal/webhook (the
// signature format); nothing else of the module.
package refundsim
