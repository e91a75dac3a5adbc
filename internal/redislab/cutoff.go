package redislab

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// CutOffReplica makes a master's next writes reach none of its replicas, as an asynchronous replica that fell
// behind when its master died: pause stops the replica (SIGSTOP: the Pause of a Cluster node or of a single
// server), then the master at masterAddr drops its links to its replicas. The pause alone is not enough: a
// paused replica's kernel still takes the replication stream in, and the replica applies it once continued,
// unless its promotion comes first (a write 2 s into a pause was on the promoted replica in one run, gone in
// another). It fails when the master had no replica connected to drop. The caller resumes the replica.
func CutOffReplica(ctx context.Context, masterAddr string, pause func() error) error {
	if err := pause(); err != nil {
		return err
	}
	var dropped int64
	err := withNode(ctx, masterAddr, func(m *redis.Client) (err error) {
		dropped, err = m.ClientKillByFilter(ctx, "TYPE", "replica").Result()
		return err
	})
	if err != nil {
		return fmt.Errorf("CLIENT KILL TYPE replica on %s: %w", masterAddr, err)
	}
	if dropped == 0 {
		return fmt.Errorf("CLIENT KILL TYPE replica on %s dropped no connection: no replica was replicating from it", masterAddr)
	}
	return nil
}
