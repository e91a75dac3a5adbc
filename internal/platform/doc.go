// Package platform wires the processes: the slog logger, the Temporal client (with its logger bridged to
// slog, and TLS, mTLS or an API key from the configuration), Redis and the database with their pools
// (OpenStores), the namespace's search attributes, the worker's options, the Temporal SDK's metrics
// (NewTemporalMetricsHandler) and the worker's metrics endpoint (ServeMetrics), and the process side of
// reconciliation: its settings (ReconcileConfigFromEnv), the Schedule that starts ReconcileWorkflow
// (EnsureSchedule), an on-demand run (RunOnce) and the probe that tells whether an order's workflow is gone
// (Probe).
//
// May import: activities, workflows, internal/config, internal/redisstock, internal/sqlstore,
// internal/reconcile, go-redis, the Temporal SDK and API, Prometheus and the standard library. Must not import
// GORM, database/sql or drivers (the database opens through internal/sqlstore) or the Temporal server
// (checked by internal/layers).
package platform
