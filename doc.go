// Package ordersaga holds the domain types every layer shares: order statuses, lines and the order view
// that the API returns. The saga itself lives in workflows/, its I/O in activities/.
package ordersaga
