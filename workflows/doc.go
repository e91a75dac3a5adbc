// Package workflows holds the order saga (OrderWorkflow) and its contract (api.go): task queue, workflow ID,
// signal/query/update names, inputs and search attributes. Code here is deterministic: no I/O, no wall clock,
// no goroutines, no map iteration; every effect goes through the activities package.
package workflows
