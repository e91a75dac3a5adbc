package sqlstore

import (
	"errors"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"gorm.io/gorm"
)

var tracer = otel.Tracer("github.com/ordersaga/ordersaga/internal/sqlstore")

// spanKey is where a statement's span waits, in the GORM statement's settings, between the callbacks.
const spanKey = "ordersaga:span"

// Trace adds an OpenTelemetry client span to each SQL statement the store runs, as a child of the caller's
// span (a deduct's UPDATE and INSERTs under the DeductOrder activity's span): named by the operation and the
// table, with the statement's text (its placeholders, never the values). Call it once, when tracing is on
// (platform.OpenStores).
func (s *Store) Trace() error {
	cb := s.db.Callback()
	var errs []error
	for _, op := range []struct {
		name   string
		before func(string, func(*gorm.DB)) error
		after  func(string, func(*gorm.DB)) error
		gormOp string
	}{
		{"INSERT", cb.Create().Before("gorm:create").Register, cb.Create().After("gorm:create").Register, "create"},
		{"SELECT", cb.Query().Before("gorm:query").Register, cb.Query().After("gorm:query").Register, "query"},
		{"UPDATE", cb.Update().Before("gorm:update").Register, cb.Update().After("gorm:update").Register, "update"},
		{"DELETE", cb.Delete().Before("gorm:delete").Register, cb.Delete().After("gorm:delete").Register, "delete"},
		{"SQL", cb.Raw().Before("gorm:raw").Register, cb.Raw().After("gorm:raw").Register, "raw"},
		{"SQL", cb.Row().Before("gorm:row").Register, cb.Row().After("gorm:row").Register, "row"},
	} {
		errs = append(errs,
			op.before("ordersaga:trace_before_"+op.gormOp, startSpan(op.name, s.dialect)),
			op.after("ordersaga:trace_after_"+op.gormOp, endSpan))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("trace SQL statements: %w", err)
	}
	return nil
}

func startSpan(op, dialect string) func(*gorm.DB) {
	return func(db *gorm.DB) {
		ctx := db.Statement.Context
		if ctx == nil || !trace.SpanFromContext(ctx).SpanContext().IsValid() {
			return // a statement outside any trace (a background job's) starts none
		}
		name := op
		if t := db.Statement.Table; t != "" {
			name += " " + t
		}
		_, span := tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(attribute.String("db.system.name", dialect)))
		db.Statement.Settings.Store(spanKey, span)
	}
}

func endSpan(db *gorm.DB) {
	v, ok := db.Statement.Settings.LoadAndDelete(spanKey)
	if !ok {
		return
	}
	span := v.(trace.Span)
	defer span.End()
	if sql := db.Statement.SQL.String(); sql != "" {
		span.SetName(statementName(sql))
		span.SetAttributes(attribute.String("db.query.text", sql))
	}
	span.SetAttributes(attribute.Int64("db.response.returned_rows", db.Statement.RowsAffected))
	if err := db.Error; err != nil && !errors.Is(err, gorm.ErrRecordNotFound) {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
}

// statementName names a statement's span by its operation and its first table ("UPDATE inventory", "SELECT
// orders", "INSERT stock_ledger"), or its first word when it has no table ("BEGIN").
func statementName(sql string) string {
	words := strings.Fields(sql)
	if len(words) == 0 {
		return "SQL"
	}
	op := strings.ToUpper(words[0])
	after := map[string]string{"SELECT": "FROM", "DELETE": "FROM", "INSERT": "INTO", "REPLACE": "INTO", "UPDATE": ""}
	kw, ok := after[op]
	if !ok {
		return op
	}
	for i, w := range words[1:] {
		if kw == "" || strings.EqualFold(w, kw) {
			j := i + 1
			if kw != "" {
				j++
			}
			if j < len(words) {
				return op + " " + strings.Trim(words[j], "`\"(,;")
			}
			break
		}
	}
	return op
}
