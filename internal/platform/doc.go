// Package platform opens what the processes share: the slog logger, the Temporal client (with its logger
// bridged to slog), Redis and the database, and registers the namespace's search attributes.
package platform
