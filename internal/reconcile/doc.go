// Package reconcile is the process side of reconciliation (docs/design.md, layer 3): the Temporal Schedule that
// starts ReconcileWorkflow (EnsureSchedule, called at starter boot), an on-demand run (RunOnce, the reconcile
// command), the probe that tells whether an order's workflow is gone, and the settings read from the
// environment. The workflow is in workflows/, the work itself in activities/.
//
// May import: activities, workflows, the Temporal SDK and API, Prometheus and the standard library (net/http
// for metrics). Must not import go-redis, GORM, database/sql or drivers, the Temporal workflow package or
// server (checked by internal/layers).
package reconcile
