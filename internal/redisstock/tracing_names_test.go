package redisstock

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestSpanNameNamesEveryScript: a traced call of any of the store's scripts, by EVALSHA or by EVAL, is named
// by its file under lua/, so that a trace says which script ran.
func TestSpanNameNamesEveryScript(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("lua", "*.lua"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no script under lua/ (%v)", err)
	}
	ctx := context.Background()
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(f)
		byHash := redis.NewCmd(ctx, "evalsha", redis.NewScript(string(src)).Hash(), 0)
		bySource := redis.NewCmd(ctx, "eval", string(src), 0)
		if got, want := spanName(byHash), "redis evalsha "+name; got != want {
			t.Errorf("EVALSHA of %s is traced as %q, want %q", name, got, want)
		}
		if got, want := spanName(bySource), "redis eval "+name; got != want {
			t.Errorf("EVAL of %s is traced as %q, want %q", name, got, want)
		}
	}
}
