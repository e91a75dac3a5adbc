package admission_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/admission"
	"github.com/ordersaga/ordersaga/internal/redisstock"
	"github.com/ordersaga/ordersaga/internal/testenv"
	"github.com/redis/go-redis/v9"
)

// keyCalls records the keys of every script call (EVAL, EVALSHA, by SHA1) and every MULTI a client sends.
type keyCalls struct {
	mu      sync.Mutex
	scripts map[string][][]string
	txs     [][]string
}

func (c *keyCalls) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *keyCalls) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.script(cmd)
		return next(ctx, cmd)
	}
}

func (c *keyCalls) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		var tx []string
		inTx := false
		for _, cmd := range cmds {
			switch cmd.Name() {
			case "multi":
				inTx = true
			case "exec":
				c.mu.Lock()
				c.txs = append(c.txs, tx)
				c.mu.Unlock()
				tx, inTx = nil, false
			default:
				if inTx && len(cmd.Args()) > 1 {
					tx = append(tx, cmd.Args()[1].(string))
				}
				c.script(cmd)
			}
		}
		return next(ctx, cmds)
	}
}

func (c *keyCalls) script(cmd redis.Cmder) {
	if cmd.Name() != "eval" && cmd.Name() != "evalsha" {
		return
	}
	args := cmd.Args()
	sha := args[1].(string)
	if cmd.Name() == "eval" {
		sha = redis.NewScript(sha).Hash()
	}
	n := args[2].(int)
	keys := make([]string, n)
	for i := range n {
		keys[i] = args[3+i].(string)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.scripts[sha] = append(c.scripts[sha], keys)
}

// hashTag is the part of a key Redis Cluster hashes: the text between the first '{' and the next '}' when
// that is not empty, else the whole key. Keys with one tag share a slot.
func hashTag(key string) string {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			return key[i+1 : i+1+j]
		}
	}
	return key
}

// TestScriptsAndTransactions_KeysShareOneTag runs every gate call that runs a script (lua/unadmit.lua and
// the scripts written inline) or a MULTI, and checks each call's keys share one hash tag: Redis Cluster
// refuses a script whose keys cross slots, and go-redis would split such a MULTI into one per slot.
func TestScriptsAndTransactions_KeysShareOneTag(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	rdb, prefix := testenv.RedisClient(t)
	calls := &keyCalls{scripts: map[string][][]string{}}
	rdb.AddHook(calls)
	rs := redisstock.New(rdb, prefix, 0)
	g := admission.New(rs)
	t.Cleanup(g.Kill)
	sku := "SKU-" + testenv.RandomID(4)
	if err := rs.SetAvailable(ctx, sku, 1); err != nil {
		t.Fatal(err)
	}
	a, refused, err := g.Admit(ctx, []ordersaga.Line{{SKU: sku, Qty: 1}}, time.Minute)
	if err != nil || refused != "" {
		t.Fatalf("admit: %q %v", refused, err)
	}
	if _, refused, err := g.Admit(ctx, []ordersaga.Line{{SKU: sku, Qty: 1}}, time.Minute); err != nil || refused != sku {
		t.Fatalf("admit past the stock: %q %v, want %s refused", refused, err, sku)
	}
	a.Done(ctx)
	if _, err := g.ReapAdmissions(ctx, sku); err != nil {
		t.Fatal(err)
	}
	token, err := g.BeginClaimsBackfill(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.FinishClaimsBackfill(ctx, token); err != nil {
		t.Fatal(err)
	}

	src, err := os.ReadFile(filepath.Join("lua", "unadmit.lua"))
	if err != nil {
		t.Fatal(err)
	}
	if len(calls.scripts[redis.NewScript(string(src)).Hash()]) == 0 {
		t.Error("unadmit.lua: no call ran it")
	}
	if len(calls.scripts) != 3 {
		t.Errorf("%d scripts ran, want 3 (unadmit.lua, the reap, the backfill's finish)", len(calls.scripts))
	}
	if len(calls.txs) == 0 {
		t.Error("no MULTI recorded")
	}
	all := calls.txs
	for _, runs := range calls.scripts {
		all = append(all, runs...)
	}
	for _, keys := range all {
		for _, k := range keys {
			if hashTag(k) != hashTag(keys[0]) {
				t.Errorf("keys %v: %q and %q hash on different tags", keys, k, keys[0])
			}
		}
	}
}
