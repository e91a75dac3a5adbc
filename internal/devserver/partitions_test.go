package devserver_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/server/api/adminservice/v1"
	taskqueuespb "go.temporal.io/server/api/taskqueue/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// The in-process server writes each task queue's new tasks to one partition. With the server's default of 4, a
// workflow task that found no poller on its partition waited in that partition's backlog for a poll forwarded
// from another (at most 10 a second), and 64 concurrent orders stalled for 4-5 s at a time (BENCHMARKS.md, pair
// 5). The test starts workflows that nobody polls and reads each partition's backlog through the admin API:
// every task is on partition 0, and the server still answers for partitions 1-3 (polls read them, so tasks that
// a data directory's earlier runs left there are delivered).
func TestNewTasksGoToOnePartition(t *testing.T) {
	t.Parallel()
	srv := startTemporal(t, filepath.Join(t.TempDir(), "temporal.db"))
	defer srv.Stop()
	c := dial(t, srv.Address())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const queue, n = "partitions-nobody-polls", 16
	for i := range n {
		opts := client.StartWorkflowOptions{ID: fmt.Sprintf("partitions-%02d", i), TaskQueue: queue}
		if _, err := c.ExecuteWorkflow(ctx, opts, "Whatever"); err != nil {
			t.Fatal(err)
		}
	}
	conn, err := grpc.NewClient(srv.Address(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	admin := adminservice.NewAdminServiceClient(conn)
	backlog := func(partition int32) int64 {
		resp, err := admin.DescribeTaskQueuePartition(ctx, &adminservice.DescribeTaskQueuePartitionRequest{
			Namespace: "default",
			TaskQueuePartition: &taskqueuespb.TaskQueuePartition{
				TaskQueue: queue, TaskQueueType: enumspb.TASK_QUEUE_TYPE_WORKFLOW,
				PartitionId: &taskqueuespb.TaskQueuePartition_NormalPartitionId{NormalPartitionId: partition},
			},
			BuildIds: &taskqueuepb.TaskQueueVersionSelection{Unversioned: true},
		})
		if err != nil {
			t.Fatalf("partition %d: %v", partition, err)
		}
		var sum int64
		for _, v := range resp.GetVersionsInfoInternal() {
			sum += v.GetPhysicalTaskQueueInfo().GetTaskQueueStats().GetApproximateBacklogCount()
		}
		return sum
	}
	var counts [4]int64
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		for p := range counts {
			counts[p] = backlog(int32(p))
		}
		if counts[0]+counts[1]+counts[2]+counts[3] >= n || time.Now().After(deadline) {
			break
		}
	}
	if counts != [4]int64{n, 0, 0, 0} {
		t.Errorf("workflow tasks in the backlog of partitions 0-3: %v, want all %d on partition 0", counts, n)
	}
}
