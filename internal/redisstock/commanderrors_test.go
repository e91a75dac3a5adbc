package redisstock_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/ordersaga/ordersaga/internal/redisstock"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

// The reads below send several commands in one round trip. go-redis reports the first failed command as the
// round trip's error, and a missing key (redis.Nil) is a failure to it: when the counter is missing, an
// error of a later command hid behind that redis.Nil and read as "no holds" or "no version". Every
// command's own error counts; only the absence a command may meet is an answer.

// wrongType replaces key with a value of another type: a hash where a string is read, a string where a hash is.
func wrongType(t *testing.T, rs *redisstock.Store, key string, asHash bool) {
	t.Helper()
	ctx := t.Context()
	if err := rs.Client().Del(ctx, key).Err(); err != nil {
		t.Fatal(err)
	}
	var err error
	if asHash {
		err = rs.Client().HSet(ctx, key, "f", 1).Err()
	} else {
		err = rs.Client().Set(ctx, key, "not-a-hash", 0).Err()
	}
	if err != nil {
		t.Fatal(err)
	}
}

// wantCommandError checks that a read failed, naming the SKU, on a command's own error.
func wantCommandError(t *testing.T, what, sku string, err error) {
	t.Helper()
	switch {
	case err == nil:
		t.Fatalf("%s: no error, want the failed command's error", what)
	case errors.Is(err, redis.Nil):
		t.Fatalf("%s: %v, want the failed command's error, not redis.Nil", what, err)
	case !strings.Contains(err.Error(), sku):
		t.Errorf("%s: %v, want an error naming %s", what, err, sku)
	default:
		t.Logf("%s: %v", what, err)
	}
}

type wrongKey struct {
	name   string
	loaded bool                                   // the counter exists (else GET avail answers redis.Nil first)
	key    func(*redisstock.Store, string) string // the key of the wrong type
	asHash bool
}

func wrongKeys(keys ...wrongKey) []wrongKey { return keys }

func TestAvailAndHeld_EveryCommandsErrorCounts(t *testing.T) {
	t.Parallel()
	for _, tc := range wrongKeys(
		wrongKey{"holds_of_the_wrong_type_counter_missing", false, (*redisstock.Store).HoldsKey, false},
		wrongKey{"holds_of_the_wrong_type_counter_loaded", true, (*redisstock.Store).HoldsKey, false},
		wrongKey{"counter_of_the_wrong_type", false, (*redisstock.Store).AvailKey, true},
	) {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rs, sku := newSKU(t, tc.loaded)
			wrongType(t, rs, tc.key(rs, sku), tc.asHash)
			avail, held, err := rs.AvailAndHeld(t.Context(), sku)
			if err == nil {
				t.Logf("read avail %v, held %d", avail, held)
			}
			wantCommandError(t, "AvailAndHeld with "+tc.key(rs, sku)+" of the wrong type", sku, err)
		})
	}
}

func TestSnapshot_EveryCommandsErrorCounts(t *testing.T) {
	t.Parallel()
	for _, tc := range wrongKeys(
		wrongKey{"holds_of_the_wrong_type_counter_missing", false, (*redisstock.Store).HoldsKey, false},
		wrongKey{"version_of_the_wrong_type_counter_missing", false, (*redisstock.Store).VersionKey, true},
		wrongKey{"holds_of_the_wrong_type_counter_loaded", true, (*redisstock.Store).HoldsKey, false},
		wrongKey{"version_of_the_wrong_type_counter_loaded", true, (*redisstock.Store).VersionKey, true},
		wrongKey{"counter_of_the_wrong_type", false, (*redisstock.Store).AvailKey, true},
	) {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rs, sku := newSKU(t, tc.loaded)
			wrongType(t, rs, tc.key(rs, sku), tc.asHash)
			snap, err := rs.Snapshot(t.Context(), sku)
			if err == nil {
				t.Logf("read %+v", snap)
			}
			wantCommandError(t, "Snapshot with "+tc.key(rs, sku)+" of the wrong type", sku, err)
		})
	}
}

// newSKU is a Redis of the test's own with a fresh SKU, its counter loaded or missing.
func newSKU(t *testing.T, loaded bool) (*redisstock.Store, string) {
	t.Helper()
	if loaded {
		return testenv.MustOpenRedisSKU(t, 5)
	}
	return testenv.MustOpenRedisSKU(t, testenv.NotLoaded)
}

// TestMarkers_EveryCommandsErrorCounts: the markers read sends GET and PTTL per marker. A GET that fails on
// a marker of the wrong type is an error; so is a PTTL that fails (here a Redis that refuses the command,
// as an ACL without +pttl does), which used to read as "no TTL", that is a marker of age 0.
func TestMarkers_EveryCommandsErrorCounts(t *testing.T) {
	t.Parallel()
	t.Run("marker_of_the_wrong_type", func(t *testing.T) {
		t.Parallel()
		rs, sku := testenv.MustOpenRedisSKU(t, 5)
		if _, err := rs.Reserve(t.Context(), "o1", "", sku, 1); err != nil {
			t.Fatal(err)
		}
		wrongType(t, rs, rs.MarkerKey(sku, "o2"), true)
		got, err := rs.Markers(t.Context(), sku)
		if err == nil {
			t.Logf("read %+v", got)
		}
		wantCommandError(t, "Markers with o2's marker of the wrong type", sku, err)
	})
	t.Run("pttl_refused", func(t *testing.T) {
		t.Parallel()
		rdb, prefix := testenv.RedisClient(t)
		rs := redisstock.New(rdb, prefix, 0)
		sku := "SKU-" + testenv.RandomID(4)
		if err := rs.SetAvailable(t.Context(), sku, 5); err != nil {
			t.Fatal(err)
		}
		for _, o := range []string{"o1", "o2"} {
			if _, err := rs.Reserve(t.Context(), o, "", sku, 1); err != nil {
				t.Fatal(err)
			}
		}
		// o1's marker expires between the scan and the read: its GET answers redis.Nil, ahead of o2's PTTL.
		rdb.AddHook(refusePTTL{skipGetOf: rs.MarkerKey(sku, "o1")})
		got, err := rs.Markers(t.Context(), sku)
		if err == nil {
			t.Logf("read %+v", got)
		}
		wantCommandError(t, "Markers with PTTL refused", sku, err)
	})
}

// refusePTTL fails every PTTL of a pipeline with Redis's answer to a command the ACL does not allow, and
// answers redis.Nil to the GET of skipGetOf (a key that expired since the scan).
type refusePTTL struct{ skipGetOf string }

func (refusePTTL) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (refusePTTL) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h refusePTTL) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		var first error
		for _, c := range cmds {
			switch {
			case c.Name() == "pttl":
				c.SetErr(errors.New("NOPERM User reconcile has no permissions to run the 'pttl' command"))
			case c.Name() == "get" && len(c.Args()) > 1 && c.Args()[1] == h.skipGetOf:
				c.SetErr(redis.Nil)
			}
			if first == nil && c.Err() != nil {
				first = c.Err()
			}
		}
		if first != nil {
			return first // as go-redis answers: the first failed command's error
		}
		return err
	}
}
