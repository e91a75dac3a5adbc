package placement

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ordersaga/ordersaga"
)

// Request is one order to place: the buyer, the Idempotency-Key and the lines, as the client sent them.
type Request struct {
	UserID string
	Key    string
	Lines  []ordersaga.Line // SKU and Qty; in any order (the same lines listed otherwise are the same request)
}

// keyChars is the Idempotency-Key's character set (docs/http-api.md), and maxKeyLen its length at most
// (idempotency_keys.idem_key is VARCHAR(255)).
var keyChars = ordersaga.NewCharset("_.:-")

const maxKeyLen = 255

// ValidKey reports whether key can be an Idempotency-Key: 1-255 characters of A-Za-z0-9-_.:
func ValidKey(key string) bool { return keyChars.Holds(key, maxKeyLen) }

// ErrInvalidRequest is Place's error for a request that breaks the rulebook (its caller checks the request
// first and names the field at fault its own way: the service never places such a request).
var ErrInvalidRequest = errors.New("invalid order request")

// check returns ErrInvalidRequest, naming the fault, when r is not a valid order request.
func (r Request) check() error {
	switch {
	case !ValidKey(r.Key):
		return fmt.Errorf("%w: idempotency key", ErrInvalidRequest)
	case !ordersaga.ValidName(r.UserID):
		return fmt.Errorf("%w: user_id", ErrInvalidRequest)
	}
	if p := ordersaga.NewOrderRules.CheckLines(r.Lines); p != nil {
		return fmt.Errorf("%w: %s", ErrInvalidRequest, p.Field())
	}
	return nil
}

// canonical returns r with its lines (SKU and Qty only, a copy) sorted by SKU: the form the fingerprint and
// the workflow get.
func (r Request) canonical() Request {
	lines := make([]ordersaga.Line, len(r.Lines))
	for i, l := range r.Lines {
		lines[i] = ordersaga.Line{SKU: l.SKU, Qty: l.Qty}
	}
	r.Lines = lines
	slices.SortFunc(r.Lines, func(a, b ordersaga.Line) int { return strings.Compare(a.SKU, b.SKU) })
	return r
}

// fingerprint identifies the meaning of a canonical request: the same key with another fingerprint is
// refused (KeyReused). Lines count in SKU order, so the same lines listed in another order are the same
// request.
func (r Request) fingerprint() string {
	var b strings.Builder
	b.WriteString(r.UserID)
	for _, l := range r.Lines {
		b.WriteString("\x00")
		b.WriteString(l.SKU)
		b.WriteString("\x00")
		b.WriteString(strconv.FormatInt(l.Qty, 10))
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:])
}

// OrderID is the order ID of (user, Idempotency-Key) in the life of the key's row named by nonce, at a
// generation. The nonce is new for each life of the row (written when the key is first used and again when its
// expired row is renewed), so a key used again after IDEMPOTENCY_RETENTION gets order IDs that differ from
// every earlier one. The generation moves on only when that order was rejected. By the nonce's form:
//
//   - a timed nonce (NewNonce: "t", 12 hex characters of the life's start in Unix milliseconds, 19 random):
//     "o-", those 12 time characters, and 24 hex characters of sha256(user \x00 key \x00 nonce \x00
//     generation). Order IDs made later sort later, so the rows that each order adds to the database's indexes
//     on order_id (the ledger's, the orders', their lines') land beside the last ones instead of anywhere:
//     a group commit of a hot SKU's deducts on SQLite ran 3.5 times as many a second (BENCHMARKS.md, "Order
//     IDs in time order");
//   - a random nonce (32 hex characters, from before timed nonces): "o-" and 24 hex characters of the same
//     sha256;
//   - no nonce (a row from before migration 0005): "o-" and 24 hex characters of sha256(user \x00 key \x00
//     generation).
//
// A row's order ID is stored with it and read back, so a row of an earlier form keeps the IDs it has.
func OrderID(userID, key, nonce string, generation int64) string {
	in := userID + "\x00" + key + "\x00"
	if nonce != "" {
		in += nonce + "\x00"
	}
	sum := sha256.Sum256([]byte(in + strconv.FormatInt(generation, 10)))
	id := hex.EncodeToString(sum[:])[:24]
	if t, ok := nonceTime(nonce); ok {
		return "o-" + t + id
	}
	return "o-" + id
}

// NewNonce returns the nonce of a new life of a key's row: "t", the time now in Unix milliseconds as 12 hex
// characters (zero-padded: they sort as the times do), and 19 random hex characters (76 bits); 32 characters
// in all (idempotency_keys.nonce is VARCHAR(32)).
func NewNonce() string {
	return newNonceAt(time.Now())
}

func newNonceAt(now time.Time) string {
	b := make([]byte, 10)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return fmt.Sprintf("t%012x", uint64(now.UnixMilli())&(1<<48-1)) + hex.EncodeToString(b)[:19]
}

// nonceTime is the 12 time characters of a timed nonce.
func nonceTime(nonce string) (string, bool) {
	if len(nonce) != 32 || nonce[0] != 't' {
		return "", false
	}
	return nonce[1:13], true
}
