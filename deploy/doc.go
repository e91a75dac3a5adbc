// Package deploy holds the configuration files of the compose stack (MySQL init, Temporal's dynamic config
// and one-shot setup scripts) next to a test that checks docker-compose.yml and the Dockerfile against the
// code: pinned images, health checks where something waits on them, no clashing ports, and the environment
// the worker and the starter actually read. There is no Docker engine on the development machines, so the
// test parses; it does not run containers.
//
// Test-only: this file imports nothing; the test may import any library package of the module (checked by
// internal/layers).
package deploy
