// Package orderclient is the client side of OrderWorkflow: place an order with Update-with-Start (one round
// trip answers reserved or rejected), pay, cancel and read it. The API and the tests use it.
package orderclient
