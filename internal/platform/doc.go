// Package platform opens what the processes share: the slog logger, the Temporal client (with its logger
// bridged to slog), Redis and the database, and registers the namespace's search attributes.
//
// May import: activities, workflows, internal/config, go-redis, the Temporal SDK and API, and the standard
// library. Must not import GORM, database/sql or drivers (the database opens through activities), net/http,
// or the Temporal server (checked by internal/layers).
package platform
