package sqlstore

import "testing"

func TestStatementName(t *testing.T) {
	for sql, want := range map[string]string{
		"UPDATE `inventory` SET stock = stock - ? WHERE sku = ? AND stock >= ?": "UPDATE inventory",
		"SELECT order_id, pay_by FROM orders WHERE status IN (?, ?)":            "SELECT orders",
		"INSERT INTO `stock_ledger` (`order_id`,`sku`) VALUES (?,?)":            "INSERT stock_ledger",
		"DELETE FROM idempotency_keys WHERE created_at < ? LIMIT ?":             "DELETE idempotency_keys",
		"INSERT IGNORE INTO user_units (sku, user_id, units) VALUES (?, ?, ?)":  "INSERT user_units",
		"SELECT 1":      "SELECT",
		"  ":            "SQL",
		"SAVEPOINT sp1": "SAVEPOINT",
	} {
		if got := statementName(sql); got != want {
			t.Errorf("statementName(%q) = %q, want %q", sql, got, want)
		}
	}
}
