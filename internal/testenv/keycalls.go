package testenv

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
)

// KeyCalls is a go-redis hook that records the keys of every script call (EVAL and EVALSHA, by the script's
// SHA1) and of every MULTI a client sends: a test runs a store's calls through it and checks that each call's
// keys share one Redis Cluster slot (CheckOneSlot).
type KeyCalls struct {
	mu      sync.Mutex
	scripts map[string][][]string // SHA1 -> the keys of each call
	txs     [][]string            // the keys of each MULTI
}

// RecordKeyCalls adds a KeyCalls to rdb and returns it.
func RecordKeyCalls(rdb redis.UniversalClient) *KeyCalls {
	c := &KeyCalls{scripts: map[string][][]string{}}
	rdb.AddHook(c)
	return c
}

// Script returns the keys of each call of the script src, in the order they were sent.
func (c *KeyCalls) Script(src string) [][]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.scripts[redis.NewScript(src).Hash()]
}

// Scripts returns how many distinct scripts were called.
func (c *KeyCalls) Scripts() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.scripts)
}

// All returns the keys of every script call and every MULTI recorded; MULTIs says how many of them are
// transactions.
func (c *KeyCalls) All() (calls [][]string, multis int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	calls = append(calls, c.txs...)
	for _, runs := range c.scripts {
		calls = append(calls, runs...)
	}
	return calls, len(c.txs)
}

// DialHook is the hook's dial step: unchanged.
func (c *KeyCalls) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook records a script call sent alone.
func (c *KeyCalls) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.record(cmd)
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook records the script calls of a pipeline and the keys of each MULTI in it.
func (c *KeyCalls) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
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
				c.record(cmd)
			}
		}
		return next(ctx, cmds)
	}
}

func (c *KeyCalls) record(cmd redis.Cmder) {
	name := cmd.Name()
	if name != "eval" && name != "evalsha" {
		return
	}
	args := cmd.Args()
	sha := args[1].(string)
	if name == "eval" {
		sha = redis.NewScript(sha).Hash()
	}
	var n int
	switch v := args[2].(type) {
	case int:
		n = v
	case int64:
		n = int(v)
	default:
		panic("testenv: a script call's key count of an unexpected type")
	}
	keys := make([]string, n)
	for i := range n {
		keys[i] = args[3+i].(string)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.scripts[sha] = append(c.scripts[sha], keys)
}

// CheckOneSlot fails the test when keys do not all hash to one Redis Cluster slot: a script or a MULTI over
// them would be refused (CROSSSLOT) or split.
func CheckOneSlot(tb testing.TB, what string, keys []string) {
	tb.Helper()
	for _, k := range keys {
		if KeySlot(k) != KeySlot(keys[0]) {
			tb.Errorf("%s: key %q is in slot %d, %q in slot %d: the call crosses slots", what, k, KeySlot(k),
				keys[0], KeySlot(keys[0]))
		}
	}
}

// HashTag is the part of a key Redis Cluster hashes: the text between the first '{' and the next '}' when
// that is not empty, else the whole key. Keys with one tag share a slot.
func HashTag(key string) string {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			return key[i+1 : i+1+j]
		}
	}
	return key
}

// KeySlot is the Redis Cluster slot of key: CRC16 of its hash tag, modulo 16384.
func KeySlot(key string) uint16 { return crc16([]byte(HashTag(key))) % 16384 }

// crc16 is the CRC16-CCITT (XMODEM) that Redis Cluster hashes keys with.
func crc16(b []byte) uint16 {
	var crc uint16
	for _, c := range b {
		crc ^= uint16(c) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}
