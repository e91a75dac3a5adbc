// Package orderclient is the client side of OrderWorkflow: place an order with Update-with-Start (one round
// trip answers reserved or rejected), pay, cancel and read it. The API and the tests use it.
//
// May import: the root package, workflows, the Temporal SDK client and API, and the standard library. Must
// not import go-redis, GORM, database/sql, drivers or net/http (checked by internal/layers).
package orderclient
