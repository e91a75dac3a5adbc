package devserver

import (
	"testing"

	"go.temporal.io/server/common/dynamicconfig"
)

// The in-process server writes each task queue's new tasks to one partition (pair 5 in BENCHMARKS.md: with the
// default 4, 64 concurrent orders stalled for 4-5 s at a time) and still reads at least as many partitions as
// it writes, so that tasks which a data directory's earlier runs left on other partitions are still read.
func TestOneWritePartitionPerTaskQueue(t *testing.T) {
	dc := dynamicConfig(TemporalOptions{})
	write, ok := dc[dynamicconfig.MatchingNumTaskqueueWritePartitions.Key()].(int)
	if !ok || write != 1 {
		t.Fatalf("%s = %v, want 1", dynamicconfig.MatchingNumTaskqueueWritePartitions.Key(), dc[dynamicconfig.MatchingNumTaskqueueWritePartitions.Key()])
	}
	read, ok := dc[dynamicconfig.MatchingNumTaskqueueReadPartitions.Key()].(int)
	if !ok || read < 4 {
		t.Fatalf("%s = %v, want at least the server's default of 4 (tasks of earlier runs may sit on them)", dynamicconfig.MatchingNumTaskqueueReadPartitions.Key(), dc[dynamicconfig.MatchingNumTaskqueueReadPartitions.Key()])
	}
}
