// Package workflows holds the order saga (OrderWorkflow) and its contract (api.go): task queue, workflow ID,
// signal/query/update names, inputs and search attributes. Code here is deterministic: no I/O, no wall clock,
// no goroutines, no map iteration; every effect goes through the activities package.
//
// # Versioning
//
// A worker replays the histories of workflows started by earlier releases (orders wait up to a day), so the
// commands a workflow issues — activities and local activities, timers, search-attribute upserts, child
// workflows, an update's acceptance and answer, and their order and count — may only change behind a version
// marker (an update answered after an activity instead of before it is such a change):
//
//	v := workflow.GetVersion(ctx, "<change-id>", workflow.DefaultVersion, 1)
//	if v == workflow.DefaultVersion { /* the old commands */ } else { /* the new ones */ }
//
// One change ID per change, never reused; raise the maximum (2, 3, …) for a later change of the same code, and
// drop an old branch only once no workflow that took it can still be open. On the accepted path, where a marker
// and the search-attribute upsert that GetVersion makes would cost every order more than the change saves, a
// change may instead branch on what the start event carries: a field of OrderInput the starter sets
// (ConfirmInDeduct) or the search attributes given with the start. Histories started without them take the old
// branch on replay, as they did when recorded. Changes to names, inputs and results
// (api.go) must keep decoding what older releases sent.
//
// testdata/histories/<YYYY-MM-DD>-<commit>/ holds, per release, one history of every path (TestReplay replays
// them all; TestReleaseHistoriesComplete lists the paths). Released histories are never re-recorded or edited.
// Replay catches a command of another type or ID (added, removed, reordered) and an order that ends in another
// status; it does not compare timer durations or activity inputs, so those changes need the same care by review.
// At each release, from a clean checkout of the released commit, record a new directory:
//
//	go test ./internal/e2e -run TestRecordRelease -record-release=$(git log -1 --date=short --format=%cd)-$(git rev-parse --short HEAD)
//
// and commit it. A new path gets a scenario in internal/e2e/record_test.go and an entry in requiredHistories
// whose since is the release that first records it.
//
// May import: the root package, activities (to name the activities and their inputs), the Temporal SDK
// (workflow, temporal, log, worker) and API types, and the standard library. Must not import go-redis,
// miniredis, GORM, database/sql or any driver, net/..., os/..., syscall, math/rand, crypto/rand, the Temporal
// client or activity packages, or any other package of the module (checked by internal/layers).
package workflows
