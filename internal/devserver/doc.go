// Package devserver runs Temporal on one machine, inside the calling process: the server with SQLite
// persistence (a file that survives restarts, or memory) and the Temporal UI. The local stack uses it so a
// fresh clone needs no Temporal install and downloads nothing at run time.
//
// May import: the Temporal server, SDK and API, the Temporal UI server and the standard library; nothing of
// the module; no go-redis, GORM or database drivers (checked by internal/layers).
package devserver
