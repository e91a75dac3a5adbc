package workflows

import (
	"path/filepath"
	"testing"

	"go.temporal.io/sdk/worker"
)

// TestReplay replays recorded histories of the paid, expired and sold-out paths against the current
// OrderWorkflow: a change that breaks determinism for orders already running fails here. Record them anew
// (only for an intended, versioned change) with:
//
//	go test ./internal/e2e -run TestSagaEndToEnd -update-histories
func TestReplay(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 3 {
		t.Fatalf("want the paid, expired and sold-out histories in testdata, found %v", files)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			r.RegisterWorkflow(OrderWorkflow)
			if err := r.ReplayWorkflowHistoryFromJSONFile(nil, f); err != nil {
				t.Fatalf("replay %s: %v", f, err)
			}
		})
	}
}
