package redisstock

import "strconv"

// The key layout: every key of a SKU carries the SKU as its hash tag ({sku}), so one script's keys share a
// slot and the scripts run unchanged on Redis Cluster. Every key is prefixed (New). The order API's admission
// gate (internal/admission) keeps its keys here too, so the layout is read in one place.

// AvailKey is the counter of units Redis may still promise for a SKU.
func (r *Store) AvailKey(sku string) string { return r.prefix + "inv:{" + sku + "}:avail" }

// HoldsKey is the hash order ID -> units held and not yet confirmed by the DB deduct.
func (r *Store) HoldsKey(sku string) string { return r.prefix + "inv:{" + sku + "}:holds" }

// MarkerKey is the per-order marker of a SKU: H:<qty> held, C:<qty> confirmed, R:<qty> released, T tombstone.
func (r *Store) MarkerKey(sku, orderID string) string {
	return r.prefix + "inv:{" + sku + "}:o:{" + orderID + "}"
}

// VersionKey counts the changes every script makes to a SKU's counter, holds and markers, so that
// reconciliation's compare-and-set can tell "unchanged" from "changed and changed back" (repair_avail.lua).
func (r *Store) VersionKey(sku string) string { return r.prefix + "inv:{" + sku + "}:ver" }

// AdmittingKey counts the units of a SKU in orders the API is placing right now (admission.Gate.Admit).
func (r *Store) AdmittingKey(sku string) string { return r.prefix + "inv:{" + sku + "}:admitting" }

// LimitKey is the SKU's per-user limit as the database has it (missing or 0: none), set by every load of the
// SKU from the database (SetLimit).
func (r *Store) LimitKey(sku string) string { return r.prefix + "inv:{" + sku + "}:limit" }

// UserKey is the hash order ID -> units of the SKU one user holds or bought: reserve.lua adds an order while
// the SKU has a limit, release.lua takes it off, and the marker TTL bounds it (the database's user_units is
// the truth; reconciliation squares the two).
func (r *Store) UserKey(sku, userID string) string { return r.userKeyHead(sku) + userID + "}" }

// userKeyHead is what every UserKey of a SKU starts with.
func (r *Store) userKeyHead(sku string) string { return r.prefix + "inv:{" + sku + "}:u:{" }

func (r *Store) keys(sku, orderID string) []string {
	return []string{r.AvailKey(sku), r.HoldsKey(sku), r.MarkerKey(sku, orderID), r.VersionKey(sku)}
}

// userKeys are keys plus the limit and the user's count: the keys of reserve.lua and release.lua.
func (r *Store) userKeys(sku, orderID, userID string) []string {
	return append(r.keys(sku, orderID), r.LimitKey(sku), r.UserKey(sku, userID))
}

// ClaimKey is the marker of one idempotency key (claims.go): the key may have a row in idempotency_keys. Its
// value is the nonce of the row's life; it expires a little after that life.
func (r *Store) ClaimKey(marker string) string { return r.prefix + "idem:" + marker }

// ClaimsReadyKey says the idempotency-key markers are complete; ClaimsFillingKey holds the token of the
// backfill that is completing them (one hash slot, for the compare-and-set). "v2": the markers named from
// (user, key) with the row's nonce (migration 0005); a Redis marked by an earlier release is not ready for
// them until a backfill has run (the earlier markers, idem:o-*, are read by nothing any more).
func (r *Store) ClaimsReadyKey() string { return r.prefix + "{idem}:v2:ready" }

// ClaimsFillingKey: see ClaimsReadyKey.
func (r *Store) ClaimsFillingKey() string { return r.prefix + "{idem}:v2:filling" }

// AdmittersKey is the hash owner -> units of a SKU counted by that owner's placements (admission).
func (r *Store) AdmittersKey(sku string) string { return r.AdmittingKey(sku) + ":by" }

// AdmissionLeaseKey is one API process's lease on its admission counts of a SKU.
func (r *Store) AdmissionLeaseKey(sku, owner string) string {
	return r.AdmittingKey(sku) + ":lease:" + owner
}

// LineKey is the SKU's line at the order API's front door (admission's line.lua): a sorted set ticket ->
// first arrival (unix ms), the oldest first.
func (r *Store) LineKey(sku string) string { return r.prefix + "inv:{" + sku + "}:line" }

// LineHoldersKey is the hash ticket -> "<due ms>:<units>" of the SKU's line: when the ticket's holder is due
// back at the latest, and the units it asks for.
func (r *Store) LineHoldersKey(sku string) string { return r.LineKey(sku) + ":who" }

// LineAdmittedKey counts the tickets the SKU's line has admitted (the API's estimate of its pace).
func (r *Store) LineAdmittedKey(sku string) string { return r.LineKey(sku) + ":admitted" }

// LineMetaKey is the hash of the SKU's line's bookkeeping: left (the tickets that ever left it), last (the
// latest first arrival it took), scanned (when a call last looked at its front).
func (r *Store) LineMetaKey(sku string) string { return r.LineKey(sku) + ":meta" }

// LineScriptKeys are the keys admission's line.lua touches for a SKU and one API process (owner), in the
// script's order: avail, admitting, admitting:by, the owner's lease, line, line:who, line:admitted, line:meta.
func (r *Store) LineScriptKeys(sku, owner string) []string {
	return []string{r.AvailKey(sku), r.AdmittingKey(sku), r.AdmittersKey(sku), r.AdmissionLeaseKey(sku, owner),
		r.LineKey(sku), r.LineHoldersKey(sku), r.LineAdmittedKey(sku), r.LineMetaKey(sku)}
}

// AdmissionKeys are the keys of unadmit.lua for a SKU: admitting, admitting:by.
func (r *Store) AdmissionKeys(sku string) []string {
	return []string{r.AdmittingKey(sku), r.AdmittersKey(sku)}
}

// ShardName is the name whose keys are shard i of sku: sku itself for shard 0, sku#i for the others.
func ShardName(sku string, i int) string {
	if i == 0 {
		return sku
	}
	return sku + "#" + strconv.Itoa(i)
}

// ShardsKey holds the SKU's shard count as the database has it (missing: 1), set by every load of the SKU
// from the database (SetShards). The order API reads it when it places an order (the order's N).
func (r *Store) ShardsKey(sku string) string { return r.prefix + "inv:{" + sku + "}:shards" }
