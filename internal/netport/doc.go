// Package netport picks TCP ports for servers this module starts on a port of its choosing: the in-process
// Temporal server's internal services, and the tests' servers.
//
// May import: the standard library only (checked by internal/layers).
package netport
