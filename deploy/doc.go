// Package deploy holds the configuration files of the compose stack (MySQL init, Temporal's dynamic config
// and one-shot setup scripts, Prometheus's scrape config and alert rules in prometheus/, Grafana's
// provisioning and dashboard in grafana/) next to tests that check them against the code: docker-compose.yml
// and the Dockerfile (pinned images, health checks where something waits on them, no clashing ports, the
// environment the worker and the starter actually read, the monitoring mounts), and every metric and label an
// alert or a dashboard panel names, against the /metrics of a worker and an order API started in the test.
// There is no Docker engine on the development machines, so the tests parse; they do not run containers.
// prometheus/check.sh runs promtool on the rules and their unit tests (CI's promtool step).
//
// Test-only: this file imports nothing; the test may import any library package of the module (checked by
// internal/layers).
package deploy
