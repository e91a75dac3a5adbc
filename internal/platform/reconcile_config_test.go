package platform_test

import (
	"testing"
	"time"

	"github.com/ordersaga/ordersaga/internal/config"
	"github.com/ordersaga/ordersaga/internal/platform"
	"github.com/ordersaga/ordersaga/workflows"
)

// TestConfigReconcileGraceIsTheWorkflows: the configuration (standard library only) spells the reconciliation's
// default grace out again for its check of IDEMPOTENCY_RETENTION; an unset RECONCILE_GRACE must mean the
// workflow's own default.
func TestConfigReconcileGraceIsTheWorkflows(t *testing.T) {
	t.Parallel()
	if config.DefaultReconcileGrace != workflows.DefaultReconcileGrace {
		t.Errorf("config.DefaultReconcileGrace %s, workflows.DefaultReconcileGrace %s", config.DefaultReconcileGrace, workflows.DefaultReconcileGrace)
	}
}

// TestConfigRefundUnsentAfterIsTheWorkflows: an unset REFUND_UNSENT_AFTER (config.DefaultRefundUnsentAfter)
// must mean the reconciliation workflow's own default, and the configured threshold reaches its input.
func TestConfigRefundUnsentAfterIsTheWorkflows(t *testing.T) {
	t.Parallel()
	if config.DefaultRefundUnsentAfter != workflows.DefaultRefundUnsentAfter {
		t.Errorf("config.DefaultRefundUnsentAfter %s, workflows.DefaultRefundUnsentAfter %s", config.DefaultRefundUnsentAfter,
			workflows.DefaultRefundUnsentAfter)
	}
	cfg := config.Config{Refunds: config.Refunds{UnsentAfter: 42 * time.Minute}}
	if got := platform.ReconcileInput(cfg).RefundUnsentAfter; got != 42*time.Minute {
		t.Errorf("ReconcileInput(REFUND_UNSENT_AFTER=42m).RefundUnsentAfter = %s, want 42m", got)
	}
}
