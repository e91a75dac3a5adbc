package redisstock

import (
	"context"
	"embed"
	"errors"
	"io/fs"
	"path"
	"strconv"
	"sync"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Trace adds an OpenTelemetry client span to each command rdb sends (and one to each pipeline), as a child of
// the caller's span: named by the command, and a script call by its file ("EVALSHA reserve.lua"). Call it
// once per client, when tracing is on (platform.OpenStores).
func Trace(rdb redis.UniversalClient) { rdb.AddHook(tracingHook{}) }

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
