// Package killpoint lets the chaos tool (go run ./chaos) kill a worker at a chosen point of an activity: when
// the environment variable ORDERSAGA_KILL_AT names a point, the process sends itself SIGKILL at that point's
// Nth hit (ORDERSAGA_KILL_AFTER=N, default 1). Both are read once, at process start. Unset, every Hit is one
// atomic load and nothing else: the points are inert in production.
//
// May import: the standard library only (checked by internal/layers).
package killpoint
