package redisstock_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/redisstock"
	"github.com/ordersaga/ordersaga/internal/testenv"
	"github.com/redis/go-redis/v9"
)

// TestScans_FindEveryKeyOfTheSKU: Markers and UserEntries list a SKU's keys by SCAN. On Redis Cluster each
// SKU lives on the master that owns its tag's slot, so a SCAN sent to any other node finds nothing; with
// twelve SKUs the three masters each own some. Half the SKUs hold characters SCAN MATCH treats as a
// pattern: the escaped pattern's tag is not the SKU's (a client that routes SCAN by the pattern's tag sends
// it to another slot), and unescaped it would match other SKUs' keys.
func TestScans_FindEveryKeyOfTheSKU(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.RedisClient(t)
	rs := redisstock.New(rdb, prefix, 0)
	ctx := t.Context()
	for i := range 12 {
		sku := "SKU-" + testenv.RandomID(4)
		if i%2 == 1 {
			sku = "SKU-*?[" + testenv.RandomID(4) + "]"
			// A SKU the pattern of the one above would match, were it not escaped.
			if err := rs.SetAvailable(ctx, "SKU-*?["+testenv.RandomID(4)+"]", 10); err != nil {
				t.Fatal(err)
			}
		}
		if err := rs.SetAvailable(ctx, sku, 10); err != nil {
			t.Fatal(err)
		}
		if err := rs.SetLimit(ctx, sku, 5); err != nil {
			t.Fatal(err)
		}
		orders := []string{"o1", "o2", "o3"}
		for j, o := range orders {
			if _, err := rs.Reserve(ctx, o, "u"+string(rune('a'+j)), sku, 1); err != nil {
				t.Fatal(err)
			}
		}
		markers, err := rs.Markers(ctx, sku)
		if err != nil {
			t.Fatal(err)
		}
		if got := slices.Sorted(mapKeys(markers)); !slices.Equal(got, orders) {
			t.Errorf("SKU %d: Markers found orders %v, want %v", i, got, orders)
		}
		entries, err := rs.UserEntries(ctx, sku)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != len(orders) {
			t.Errorf("SKU %d: UserEntries found %+v, want one per order %v", i, entries, orders)
		}
	}
}

// TestDeleteMatching_ReachesEveryMaster: the keys of a pattern are deleted wherever they live (on a cluster,
// sixty keys of sixty tags lie on every master, and a SCAN through the cluster client reaches one node) and
// the count says so; a key outside the pattern stays.
func TestDeleteMatching_ReachesEveryMaster(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.RedisClient(t)
	ctx := t.Context()
	for i := range 60 {
		if err := rdb.Set(ctx, prefix+"del:{SKU-"+strconv.Itoa(i)+"}:avail", i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := rdb.Set(ctx, prefix+"kept:{SKU-0}", 1, 0).Err(); err != nil {
		t.Fatal(err)
	}
	n, err := redisstock.DeleteMatching(ctx, rdb, redisstock.GlobEscape(prefix)+"del:*")
	if err != nil || n != 60 {
		t.Fatalf("DeleteMatching = %d, %v; want 60 deleted", n, err)
	}
	left := func(ctx context.Context, node redis.Cmdable) error {
		keys, err := node.Keys(ctx, redisstock.GlobEscape(prefix)+"del:*").Result()
		if len(keys) > 0 {
			t.Errorf("%d keys of the pattern left: %v", len(keys), keys)
		}
		return err
	}
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error { return left(ctx, m) })
	} else {
		err = left(ctx, rdb)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := rdb.Get(ctx, prefix+"kept:{SKU-0}").Err(); err != nil {
		t.Errorf("the key outside the pattern: %v, want it kept", err)
	}
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestScripts_KeysShareOneSlot runs every store call that runs a script (lua/*.lua, each file's call sites)
// or a transaction, and checks that each call's keys hash to one slot (Redis Cluster refuses a script or a
// MULTI whose keys cross slots, and go-redis would split the MULTI into one per slot: no longer atomic).
func TestScripts_KeysShareOneSlot(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.RedisClient(t)
	calls := testenv.RecordKeyCalls(rdb)
	rs := redisstock.New(rdb, prefix, 0)
	ctx := t.Context()
	sku := "SKU-" + testenv.RandomID(4)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(rs.SetLimit(ctx, sku, 9))
	_, _, err := rs.Load(ctx, sku, 10)
	must(err)
	for _, o := range []string{"o1", "o2", "o3", "o4"} {
		_, err := rs.Reserve(ctx, o, "u1", sku, 1)
		must(err)
	}
	_, err = rs.Confirm(ctx, "o1", sku)
	must(err)
	_, err = rs.Release(ctx, "o2", "u1", sku)
	must(err)
	_, err = rs.ReleaseUnsold(ctx, "o1", "u1", sku)
	must(err)
	_, err = rs.RepairHold(ctx, sku, "o3", redisstock.HoldRelease, "H:1", "1")
	must(err)
	_, err = rs.RepairUser(ctx, sku, "u1", "o4", redisstock.UserDrop, "H:1", "1", 1)
	must(err)
	snap, err := rs.Snapshot(ctx, sku)
	must(err)
	_, err = rs.RepairAvail(ctx, sku, redisstock.ModeRepair, ordersaga.SKUTruth{
		Stock: 10, Known: true, Deducted: []string{"o1"}, Pending: []string{"o2"},
		Open: []ordersaga.OpenDeduct{{OrderID: "o5", Qty: 1}},
	}, snap)
	must(err)
	_, _, err = rs.AvailAndHeld(ctx, sku)
	must(err)
	// A SKU's stock in shards: every script still runs on one shard's keys.
	split := "SPLIT-" + testenv.RandomID(4)
	must(rs.SetShards(ctx, split, 4))
	for i := range 4 {
		must(rs.SetAvailable(ctx, redisstock.ShardName(split, i), int64(i%2)))
	}
	for _, o := range []string{"s1", "s2", "s3", "s4", "s5"} {
		_, err := rs.ReserveIn(ctx, 4, o, "u1", split, 1)
		if _, sold := ordersaga.IsSoldOut(err); !sold {
			must(err)
		}
	}
	_, err = rs.ConfirmIn(ctx, 4, "s1", split)
	must(err)
	_, err = rs.ReleaseIn(ctx, 4, "s2", "u1", split)
	must(err)
	_, err = rs.ReleaseUnsoldIn(ctx, 4, "s1", "u1", split)
	must(err)
	_, err = rs.ReleaseEveryShard(ctx, 4, "s3", split, false)
	must(err)
	for _, mode := range []redisstock.Mode{redisstock.ModeRepair, redisstock.ModeLoad, redisstock.ModeSet} {
		snaps, err := rs.SnapshotShards(ctx, split, 4)
		must(err)
		_, err = rs.RepairStock(ctx, split, 4, mode, ordersaga.SKUTruth{Stock: 4, Known: true, Pending: []string{"s2"}}, snaps)
		must(err)
	}
	_, _, err = rs.AvailAndHeldIn(ctx, split, 4)
	must(err)
	_, err = rs.OtherShardsAvailable(ctx, split, 4)
	must(err)
	tags := map[string]bool{}
	for i := range 4 {
		tags[testenv.HashTag(rs.AvailKey(redisstock.ShardName(split, i)))] = true
	}
	if len(tags) != 4 {
		t.Errorf("the 4 shards of a SKU share hash tags (%v): they would all be on one master", tags)
	}
	claims := []redisstock.ClaimMarker{
		{Name: redisstock.ClaimName("u1", "k1"), Nonce: "n1", TTL: time.Minute, New: true},
		{Name: redisstock.ClaimName("u1", "k2"), Nonce: "n2", TTL: time.Minute},
	}
	must(rs.ClaimMarkers(ctx, claims...))
	_, err = rs.ForgetClaims(ctx, claims...)
	must(err)

	files, err := filepath.Glob("lua/*.lua")
	must(err)
	if len(files) == 0 {
		t.Fatal("no scripts under lua/")
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		must(err)
		runs := calls.Script(string(src))
		if len(runs) == 0 {
			t.Errorf("%s: no call ran it: add its call sites to this test", f)
		}
		for _, keys := range runs {
			testenv.CheckOneSlot(t, f, keys)
		}
	}
	all, multis := calls.All()
	if multis == 0 {
		t.Error("no transaction recorded")
	}
	for _, keys := range all {
		testenv.CheckOneSlot(t, "a script or MULTI", keys)
	}
}

// TestReserve_AfterScriptFlushOnEveryMaster: a promoted replica, or a restarted Redis, has an empty script
// cache; every store call must load its script again (EVALSHA answers NOSCRIPT, then EVAL), not fail. Not
// parallel: the flushes would reach the other tests' calls (which must survive them too, but by chance).
func TestReserve_AfterScriptFlushOnEveryMaster(t *testing.T) {
	rs, sku := testenv.MustOpenRedisSKU(t, 10)
	ctx := t.Context()
	if _, err := rs.Reserve(ctx, "o1", "u1", sku, 1); err != nil {
		t.Fatal(err)
	}
	claims := []redisstock.ClaimMarker{{Name: redisstock.ClaimName("u1", "k"), Nonce: "n", TTL: time.Minute}}
	if err := rs.ClaimMarkers(ctx, claims...); err != nil {
		t.Fatal(err)
	}
	flushScripts(t, rs.Client())
	if out, err := rs.Reserve(ctx, "o2", "u1", sku, 1); err != nil || out != ordersaga.Reserved {
		t.Fatalf("reserve after SCRIPT FLUSH = %q, %v", out, err)
	}
	if _, err := rs.Release(ctx, "o1", "u1", sku); err != nil {
		t.Fatalf("release after SCRIPT FLUSH: %v", err)
	}
	flushScripts(t, rs.Client())
	if err := rs.ClaimMarkers(ctx, claims...); err != nil {
		t.Fatalf("claim markers after SCRIPT FLUSH: %v", err)
	}
	flushScripts(t, rs.Client())
	if n, err := rs.ForgetClaims(ctx, claims...); err != nil || n != 1 {
		t.Fatalf("forget claims after SCRIPT FLUSH = %d, %v; want 1", n, err)
	}
}

// flushScripts empties the script cache of every master (a single Redis: of the server).
func flushScripts(t *testing.T, rdb redis.UniversalClient) {
	t.Helper()
	ctx := t.Context()
	var err error
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error { return m.ScriptFlush(ctx).Err() })
	} else {
		err = rdb.ScriptFlush(ctx).Err()
	}
	if err != nil && !strings.Contains(err.Error(), "unknown") {
		t.Fatal(err)
	}
}

// TestClaims_ScriptFlushedBeforeThePipeline: the idempotency-key markers load their script and then send
// EVALSHA in a pipeline; a node that forgets its scripts in between (a failover to a replica restarted since
// the load, a SCRIPT FLUSH) answers NOSCRIPT, and the call runs those scripts again by EVAL instead of failing.
func TestClaims_ScriptFlushedBeforeThePipeline(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.RedisClient(t)
	rs := redisstock.New(rdb, prefix, 0)
	ctx := t.Context()
	claims := []redisstock.ClaimMarker{
		{Name: redisstock.ClaimName("u1", "k1"), Nonce: "n1", TTL: time.Minute},
		{Name: redisstock.ClaimName("u1", "k2"), Nonce: "n2", TTL: time.Minute},
	}
	rdb.AddHook(flushBeforePipeline{t: t, rdb: rdb})
	if err := rs.ClaimMarkers(ctx, claims...); err != nil {
		t.Fatalf("claim markers: %v", err)
	}
	n, err := rs.ForgetClaims(ctx, claims...)
	if err != nil || n != 2 {
		t.Fatalf("forget claims = %d, %v; want 2", n, err)
	}
}

// flushBeforePipeline empties the script caches before each pipeline that sends EVALSHA.
type flushBeforePipeline struct {
	t   *testing.T
	rdb redis.UniversalClient
}

func (flushBeforePipeline) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (flushBeforePipeline) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h flushBeforePipeline) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if slices.ContainsFunc(cmds, func(c redis.Cmder) bool { return c.Name() == "evalsha" }) {
			flushScripts(h.t, h.rdb)
		}
		return next(ctx, cmds)
	}
}
