package redisstock

import (
	"context"
	"embed"
	"errors"
	"io/fs"
	"path"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Trace adds an OpenTelemetry client span to each command rdb sends (and one to each pipeline), as a child of
// the caller's span: named by the command, and a script call by its file ("EVALSHA reserve.lua"). Call it
// once per client, when tracing is on (platform.OpenStores).
//
// On a cluster client every node's client takes the hook too: what the store sends to one node's own client
// (MasterForKey, ForEachMaster: the acknowledged marker writes, the scans, DeleteMatching) passes the cluster
// client's hooks by. A command the cluster client routes to a node is already in its span there, and the
// node's hook leaves it alone (inSpan), so each command is one span either way.
func Trace(rdb redis.UniversalClient) {
	rdb.AddHook(tracingHook{})
	cc, ok := rdb.(*redis.ClusterClient)
	if !ok {
		return
	}
	cc.OnNewNode(func(n *redis.Client) { n.AddHook(tracingHook{}) })
	// The nodes the client knows already (OpenRedis's PING loaded the slots); a node that is also new meanwhile
	// gets the hook twice, which inSpan makes harmless. Without an answer in 5 s the nodes are met later
	// (OnNewNode).
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = cc.ForEachShard(ctx, func(_ context.Context, n *redis.Client) error {
		n.AddHook(tracingHook{})
		return nil
	})
}

// inSpan marks a context inside a Redis client span of this hook (Trace).
type inSpan struct{}

var tracer = otel.Tracer("github.com/ordersaga/ordersaga/internal/redisstock")

// scripts is every Lua script of the store, by file name.
//
//go:embed lua/*.lua
var scripts embed.FS

// scriptNames maps the SHA1 of each of the store's Lua scripts to its file name.
var scriptNames = sync.OnceValue(func() map[string]string {
	m := map[string]string{}
	files, _ := fs.Glob(scripts, "lua/*.lua") // the pattern is valid: no error
	for _, f := range files {
		src, err := scripts.ReadFile(f)
		if err != nil {
			panic("redisstock: embedded script " + f + ": " + err.Error())
		}
		m[redis.NewScript(string(src)).Hash()] = path.Base(f)
	}
	return m
})

type tracingHook struct{}

func (tracingHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (tracingHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if ctx.Value(inSpan{}) != nil {
			return next(ctx, cmd)
		}
		ctx = context.WithValue(ctx, inSpan{}, true)
		ctx, span := tracer.Start(ctx, spanName(cmd), trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(attribute.String("db.system.name", "redis"), attribute.String("db.operation.name", cmd.Name())))
		defer span.End()
		err := next(ctx, cmd)
		endSpan(span, err)
		return err
	}
}

func (tracingHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if ctx.Value(inSpan{}) != nil {
			return next(ctx, cmds)
		}
		ctx = context.WithValue(ctx, inSpan{}, true)
		ctx, span := tracer.Start(ctx, "redis pipeline", trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(attribute.String("db.system.name", "redis"), attribute.Int("db.operation.batch.size", len(cmds))))
		defer span.End()
		err := next(ctx, cmds)
		endSpan(span, err)
		return err
	}
}

// spanName is the command's name, and for a script call (EVALSHA, EVAL) the script's file.
func spanName(cmd redis.Cmder) string {
	name := cmd.Name()
	if name != "evalsha" && name != "eval" && name != "evalsha_ro" && name != "eval_ro" {
		return "redis " + name
	}
	args := cmd.Args()
	if len(args) < 2 {
		return "redis " + name
	}
	body, _ := args[1].(string)
	if name == "eval" || name == "eval_ro" {
		body = redis.NewScript(body).Hash()
	}
	if file, ok := scriptNames()[body]; ok {
		return "redis " + name + " " + file
	}
	if len(body) > 12 {
		body = body[:12]
	}
	return "redis " + name + " " + strconv.Quote(body)
}

// endSpan records a failure on span; redis.Nil (no such key) is an answer, not a failure.
func endSpan(span trace.Span, err error) {
	if err != nil && !errors.Is(err, redis.Nil) {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
}
