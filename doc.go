// Package ordersaga holds the domain types every layer shares: order statuses, lines and the order view
// that the API returns. The saga itself lives in workflows/, its I/O in activities/.
//
// May import: the standard library only, and nothing of it that does I/O (net, database/sql, os, syscall); no
// package of the module, no third-party package. Every layer imports this one (checked by internal/layers).
package ordersaga
