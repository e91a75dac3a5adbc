package platform_test

import (
	"testing"

	"github.com/ordersaga/ordersaga/internal/config"
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
