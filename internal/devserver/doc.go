// Package devserver runs Temporal on one machine, inside the calling process: the server with SQLite
// persistence (a file that survives restarts, or memory) and the Temporal UI. The local stack uses it so a
// fresh clone needs no Temporal install and downloads nothing at run time.
package devserver
