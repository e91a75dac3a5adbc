package sqlstore

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"gorm.io/gorm"

	"github.com/ordersaga/ordersaga/schema"
)

// marks is n comma-separated placeholders.
func marks(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

// insertRows inserts n rows into table in one statement, each with a value for every column of cols, appended
// to args by row(i, args). A row that breaks a constraint (a duplicate: isDuplicate) fails the statement, and:
//   - one row: the statement alone; the caller's transaction goes on (a deduct and a restore decide a
//     duplicate of their one ledger row in the same transaction);
//   - several rows on SQLite: the caller's whole transaction, rolled back (INSERT OR ROLLBACK). A plain
//     several-row INSERT inside a transaction writes a statement journal (a copy of each page it changes, so
//     that a constraint error undoes that statement alone), and that journal took a third of the CPU of a hot
//     SKU's group commit on SQLite; OR ROLLBACK needs none. Every caller of several rows returns the error and
//     ends its transaction anyway; one that must go on after a failure inserts its rows one at a time.
//
// On MySQL several rows fail the statement alone, as one does.
func (s *Store) insertRows(tx *gorm.DB, table string, cols []string, n int, row func(i int, args []any) []any) error {
	if n == 0 {
		return nil
	}
	args := make([]any, 0, len(cols)*n)
	for i := range n {
		args = row(i, args)
	}
	if len(args) != len(cols)*n {
		return fmt.Errorf("insert into %s: %d values for %d rows of %d columns", table, len(args), n, len(cols))
	}
	if n > 1 && s.dialect == schema.SQLite {
		q, args := sqliteRowsInsert(table, cols, n, args)
		return tx.Exec(q, args...).Error
	}
	return tx.Exec("INSERT INTO "+table+" ("+strings.Join(cols, ", ")+") VALUES "+values(n, len(cols)), args...).Error
}

// values is n rows of cols placeholders each, for a multi-row INSERT.
func values(n, cols int) string {
	row := "(" + marks(cols) + ")"
	return strings.TrimSuffix(strings.Repeat(row+", ", n), ", ")
}

// sqliteRowsInsert is the INSERT OR ROLLBACK of n rows of cols (args, row after row) on SQLite, with each value
// that is the same in every row (a batch's time, status, SKU) bound once, as a numbered placeholder (?1, ?2,
// …) that every row repeats: modernc.org/sqlite binds each placeholder by searching the argument list from its
// start, so a statement of p placeholders costs p²/2 steps, 16 % of the CPU of a hot SKU's group commit with
// every value its own placeholder (BENCHMARKS.md, "Group commit of a hot SKU's deducts"). The shared columns
// come first in the column list, so that SQLite numbers them before the rows' own placeholders (a plain ?
// takes the number after the largest one so far).
func sqliteRowsInsert(table string, cols []string, n int, args []any) (string, []any) {
	w := len(cols)
	var shared, own []int // column indexes
	for c := range w {
		if sameInEveryRow(args, w, n, c) {
			shared = append(shared, c)
		} else {
			own = append(own, c)
		}
	}
	var q strings.Builder
	q.WriteString("INSERT OR ROLLBACK INTO " + table + " (")
	for i, c := range slices.Concat(shared, own) {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString(cols[c])
	}
	q.WriteString(") VALUES ")
	row := make([]string, 0, w)
	for i := range shared {
		row = append(row, "?"+strconv.Itoa(i+1))
	}
	for range own {
		row = append(row, "?")
	}
	one := "(" + strings.Join(row, ", ") + ")"
	q.WriteString(strings.TrimSuffix(strings.Repeat(one+", ", n), ", "))

	out := make([]any, 0, len(shared)+len(own)*n)
	for _, c := range shared {
		out = append(out, args[c])
	}
	for r := range n {
		for _, c := range own {
			out = append(out, args[r*w+c])
		}
	}
	return q.String(), out
}

// sameInEveryRow reports whether column c of the n rows of w values in args holds one value: equal under ==
// (so a time with another location or monotonic reading, or another pointer, is another value), of a type
// that can be compared.
func sameInEveryRow(args []any, w, n, c int) bool {
	v := args[c]
	if v != nil && !reflect.TypeOf(v).Comparable() {
		return false
	}
	for r := 1; r < n; r++ {
		if args[r*w+c] != v {
			return false
		}
	}
	return true
}
