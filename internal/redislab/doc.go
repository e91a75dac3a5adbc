// Package redislab starts a local Redis Cluster for tests and measurements: redis-servers on free ports in a
// temporary directory, joined by redis-cli --cluster create, which die with the process that started them. A
// started cluster can lose a node (Kill), have one hang (Pause, Resume) and get it back (Restart); ShardOf names
// the master and replicas of a key's slot: what a failover test needs. The tests reach it through
// internal/testenv; the bench command starts one for its cluster pairs, the chaos command one for its cluster
// scenario.
//
// May import: internal/netport, go-redis and the standard library (checked by internal/layers).
package redislab
