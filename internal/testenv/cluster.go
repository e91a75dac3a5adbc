package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga/internal/netport"
	"github.com/redis/go-redis/v9"
)

// The tests' Redis Cluster. REDIS_CLUSTER=1 makes the test binary start a cluster of its own, once, on first
// use: six redis-servers (3 masters, 3 replicas) on free ports in a temporary directory. REDIS_CLUSTER_ADDRS
// (comma-separated seeds) names a running cluster instead. Either way RedisClient and MustOpenRedis answer
// with a *redis.ClusterClient on it, under a key prefix of the test's own.

// clusterMasters is how many masters the started cluster has; each has one replica.
const clusterMasters = 3

// clusterReadyTimeout bounds the wait for a started or restarted cluster to cover every slot.
const clusterReadyTimeout = 90 * time.Second

// ClusterMode reports whether the tests run against a Redis Cluster (REDIS_CLUSTER=1 or REDIS_CLUSTER_ADDRS).
func ClusterMode() bool {
	return os.Getenv("REDIS_CLUSTER") == "1" || os.Getenv("REDIS_CLUSTER_ADDRS") != ""
}

// Cluster is the Redis Cluster the tests run against. A cluster this process started can lose a node
// (Kill, a SIGKILL) and get it back (Restart, on its port and with its nodes.conf, so it rejoins): what a
// failover test needs. A cluster named by REDIS_CLUSTER_ADDRS is only used, never stopped.
type Cluster struct {
	seeds []string
	dir   string // "" for a cluster this process did not start

	mu    sync.Mutex
	nodes map[string]*clusterNode // by address; nil for a cluster this process did not start
}

// clusterNode is one redis-server of a started cluster.
type clusterNode struct {
	port, busPort int
	dir           string
	cmd           *exec.Cmd
	exited        chan struct{} // closed once the process has been waited for
}

var sharedCluster struct {
	once sync.Once
	c    *Cluster
	err  error
}

// SharedCluster returns the tests' cluster, starting it on first use when REDIS_CLUSTER=1. It fails the test
// when neither REDIS_CLUSTER=1 nor REDIS_CLUSTER_ADDRS is set, or the cluster cannot be started.
func SharedCluster(tb testing.TB) *Cluster {
	tb.Helper()
	if !ClusterMode() {
		tb.Fatal("no Redis Cluster: set REDIS_CLUSTER=1 or REDIS_CLUSTER_ADDRS")
	}
	sharedCluster.once.Do(func() {
		if seeds := os.Getenv("REDIS_CLUSTER_ADDRS"); seeds != "" {
			sharedCluster.c = &Cluster{seeds: splitSeeds(seeds)}
			return
		}
		sharedCluster.c, sharedCluster.err = startCluster()
	})
	if sharedCluster.err != nil {
		tb.Fatalf("redis cluster: %v", sharedCluster.err)
	}
	return sharedCluster.c
}

func splitSeeds(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// Addrs are the cluster's seeds: every node's address for a started cluster, REDIS_CLUSTER_ADDRS otherwise.
func (c *Cluster) Addrs() []string { return append([]string(nil), c.seeds...) }

// Client returns a new cluster client of the cluster (the caller closes it).
func (c *Cluster) Client() *redis.ClusterClient {
	return redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), PoolSize: 256})
}

// startCluster starts six nodes, joins them with redis-cli --cluster create and waits until every node says
// the cluster is ok with every slot covered and sees 3 masters and 3 replicas.
func startCluster() (c *Cluster, err error) {
	dir, err := os.MkdirTemp("", "ordersaga-redis-cluster-")
	if err != nil {
		return nil, err
	}
	if err := removeWhenGone(dir); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	c = &Cluster{dir: dir, nodes: map[string]*clusterNode{}}
	defer func() {
		if err != nil {
			c.stopAll()
		}
	}()
	for i := range 2 * clusterMasters {
		port, err := netport.Free("127.0.0.1")
		if err != nil {
			return nil, err
		}
		bus, err := netport.Free("127.0.0.1")
		if err != nil {
			return nil, err
		}
		n := &clusterNode{port: port, busPort: bus, dir: filepath.Join(dir, strconv.Itoa(i))}
		if err := os.Mkdir(n.dir, 0o755); err != nil {
			return nil, err
		}
		addr := n.addr()
		c.nodes[addr] = n
		c.seeds = append(c.seeds, addr)
		if err := n.start(); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), clusterReadyTimeout)
	defer cancel()
	for _, addr := range c.seeds {
		if err := waitPing(ctx, addr); err != nil {
			return nil, err
		}
	}
	args := append([]string{"--cluster", "create"}, c.seeds...)
	args = append(args, "--cluster-replicas", "1", "--cluster-yes")
	if out, err := exec.CommandContext(ctx, "redis-cli", args...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("redis-cli --cluster create: %w\n%s", err, out)
	}
	if err := c.WaitReady(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

func (n *clusterNode) addr() string { return "127.0.0.1:" + strconv.Itoa(n.port) }

// start runs the node's redis-server. Its output goes to a log file in its directory (not to the test
// binary's stdout: go test waits for every holder of that pipe to close it). A replica syncs at once
// (repl-diskless-sync-delay 0), and its master pings it every second, so that its replication offset
// leaves 0 within a second of an empty sync: WaitReady waits for that (CLUSTER SLOTS lists no replica at
// offset 0), and with the default period of 10 s every start would wait that long.
func (n *clusterNode) start() error {
	cmd := exec.Command("redis-server",
		"--bind", "127.0.0.1", "--port", strconv.Itoa(n.port), "--cluster-port", strconv.Itoa(n.busPort),
		"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "2000",
		"--save", "", "--appendonly", "no", "--repl-diskless-sync-delay", "0", "--repl-ping-replica-period", "1", "--dir", n.dir, "--logfile", filepath.Join(n.dir, "redis.log"))
	if err := spawnChild(cmd); err != nil {
		return fmt.Errorf("start redis-server on %s: %w", n.addr(), err)
	}
	n.cmd, n.exited = cmd, make(chan struct{})
	go func(exited chan struct{}) {
		_ = cmd.Wait()
		close(exited)
	}(n.exited)
	return nil
}

// The started nodes must not outlive the test binary, which may end without any hook of this package
// running (a test's os.Exit, a panic in another goroutine, a SIGKILL from go test's -timeout). Each
// redis-server is started with Pdeathsig SIGKILL: the kernel kills it when the thread that forked it ends.
// That is a thread, not the process, and the Go runtime may end a thread (one whose goroutine exits while
// locked to it), so every start is forked from one goroutine that locks its thread and never returns: that
// thread ends only with the process. A loop in sh polling the test's pid would work too, but its SIGKILL
// could reach a pid reused after the server it watched had died and been reaped.
var spawner struct {
	once sync.Once
	reqs chan spawnRequest
}

type spawnRequest struct {
	cmd  *exec.Cmd
	done chan error
}

func spawnChild(cmd *exec.Cmd) error {
	spawner.once.Do(func() {
		spawner.reqs = make(chan spawnRequest)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread must live as long as the process
			for r := range spawner.reqs {
				r.done <- r.cmd.Start()
			}
		}()
	})
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	done := make(chan error, 1)
	spawner.reqs <- spawnRequest{cmd: cmd, done: done}
	return <-done
}

// removeWhenGone removes dir once this process has ended: a shell in a process group of its own (so a ^C to
// go test's group does not stop it first) polls the pid and then deletes the directory. Nothing of the test
// binary runs at its end to do it; a reused pid only delays the removal.
func removeWhenGone(dir string) error {
	script := `while kill -0 "$1" 2>/dev/null; do sleep 1; done; rm -rf "$2"`
	cmd := exec.Command("sh", "-c", script, "sh", strconv.Itoa(os.Getpid()), dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start the remover of %s: %w", dir, err)
	}
	go func() { _ = cmd.Wait() }() // reaps it if this process outlives it (it never should)
	return nil
}

// stopAll kills every node of a started cluster (a failed start).
func (c *Cluster) stopAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.nodes {
		if n.cmd != nil {
			_ = n.cmd.Process.Kill()
			<-n.exited
		}
	}
}

// Kill SIGKILLs the node at addr (a node of a cluster this process started) and waits until it has exited.
func (c *Cluster) Kill(addr string) error {
	n, err := c.node(addr)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if n.cmd == nil {
		return fmt.Errorf("kill %s: not running", addr)
	}
	if err := n.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill %s: %w", addr, err)
	}
	<-n.exited
	n.cmd = nil
	return nil
}

// Restart starts the killed node at addr again, on its port and with its nodes.conf (its data is gone:
// nothing is saved), and waits until it answers PING. It rejoins the cluster by itself; WaitReady waits for
// the cluster to be whole again.
func (c *Cluster) Restart(ctx context.Context, addr string) error {
	n, err := c.node(addr)
	if err != nil {
		return err
	}
	c.mu.Lock()
	if n.cmd != nil {
		c.mu.Unlock()
		return fmt.Errorf("restart %s: still running", addr)
	}
	err = n.start()
	c.mu.Unlock()
	if err != nil {
		return err
	}
	return waitPing(ctx, addr)
}

func (c *Cluster) node(addr string) (*clusterNode, error) {
	if c.nodes == nil {
		return nil, fmt.Errorf("redis cluster node %s: the cluster was not started by this process (REDIS_CLUSTER_ADDRS)", addr)
	}
	n, ok := c.nodes[addr]
	if !ok {
		return nil, fmt.Errorf("redis cluster node %s: no such node (nodes: %v)", addr, c.seeds)
	}
	return n, nil
}

// Topology is what one node's CLUSTER NODES says: the masters (with slots) and the replicas, by address.
type Topology struct {
	Masters, Replicas []string
}

// WaitReady waits until every running node of a started cluster (the seeds of another) says cluster_state:ok
// with all 16384 slots assigned and ok; on a started cluster, until each also sees 3 masters with slots and 3
// replicas, none failing, and every slot served by a master and a synced replica.
func (c *Cluster) WaitReady(ctx context.Context) error {
	var last error
	for {
		if last = c.checkReady(ctx); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redis cluster not ready: %w", last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (c *Cluster) checkReady(ctx context.Context) error {
	for _, addr := range c.runningAddrs() {
		err := withNode(ctx, addr, func(rdb *redis.Client) error {
			info, err := rdb.ClusterInfo(ctx).Result()
			if err != nil {
				return err
			}
			for _, want := range []string{"cluster_state:ok", "cluster_slots_assigned:16384", "cluster_slots_ok:16384"} {
				if !strings.Contains(info, want+"\r\n") {
					return fmt.Errorf("%s: CLUSTER INFO lacks %s", addr, want)
				}
			}
			top, err := nodeTopology(ctx, rdb)
			if err != nil {
				return err
			}
			if c.nodes == nil {
				return nil
			}
			if len(top.Masters) != clusterMasters || len(top.Replicas) != clusterMasters {
				return fmt.Errorf("%s: sees masters %v and replicas %v", addr, top.Masters, top.Replicas)
			}
			// A replica counts once it is online and has synced from its master (a non-zero replication
			// offset, as its master's pings reach it): CLUSTER SLOTS, which clients route by, lists no
			// replica before that.
			shards, err := rdb.ClusterShards(ctx).Result()
			if err != nil {
				return err
			}
			for _, s := range shards {
				if len(s.Slots) == 0 {
					continue
				}
				synced := 0
				for _, n := range s.Nodes {
					if n.Role == "replica" && n.Health == "online" && n.ReplicationOffset > 0 {
						synced++
					}
				}
				if synced != 1 {
					return fmt.Errorf("%s: slots from %d have %d synced replicas, want 1: %+v", addr, s.Slots[0].Start, synced, s.Nodes)
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// Topology is the cluster as the node at addr sees it.
func (c *Cluster) Topology(ctx context.Context, addr string) (Topology, error) {
	var top Topology
	err := withNode(ctx, addr, func(rdb *redis.Client) (err error) {
		top, err = nodeTopology(ctx, rdb)
		return err
	})
	return top, err
}

// nodeTopology reads CLUSTER NODES: "<id> <ip:port@bus> <flags> <master> <ping> <pong> <epoch> <link> <slot>...".
// A node flagged fail or handshake counts as neither; a master counts only with slots.
func nodeTopology(ctx context.Context, rdb *redis.Client) (Topology, error) {
	out, err := rdb.ClusterNodes(ctx).Result()
	if err != nil {
		return Topology{}, err
	}
	var top Topology
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		addr, _, _ := strings.Cut(f[1], "@")
		flags := "," + f[2] + ","
		switch {
		case strings.Contains(flags, ",fail,") || strings.Contains(flags, ",fail?,") || strings.Contains(flags, ",handshake,"):
		case strings.Contains(flags, ",master,") && len(f) > 8:
			top.Masters = append(top.Masters, addr)
		case strings.Contains(flags, ",slave,"):
			top.Replicas = append(top.Replicas, addr)
		}
	}
	return top, nil
}

func (c *Cluster) runningAddrs() []string {
	if c.nodes == nil {
		return c.Addrs()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, addr := range c.seeds {
		if c.nodes[addr].cmd != nil {
			out = append(out, addr)
		}
	}
	return out
}

func withNode(ctx context.Context, addr string, fn func(*redis.Client) error) error {
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second})
	defer rdb.Close()
	return fn(rdb)
}

// waitPing waits until the server at addr answers PING.
func waitPing(ctx context.Context, addr string) error {
	for {
		err := withNode(ctx, addr, func(rdb *redis.Client) error { return rdb.Ping(ctx).Err() })
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redis-server %s does not answer: %w", addr, errors.Join(ctx.Err(), err))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// clusterClient is RedisClient on the cluster: a client of the test's own and a fresh key prefix, whose keys
// are deleted from every master at cleanup.
func clusterClient(tb testing.TB) (redis.UniversalClient, string) {
	tb.Helper()
	rdb := SharedCluster(tb).Client()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rdb.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error { return m.Ping(ctx).Err() }); err != nil {
		rdb.Close()
		tb.Fatalf("redis cluster: %v", err)
	}
	prefix := "t" + RandomID(6) + ":"
	tb.Cleanup(func() {
		_, _ = deleteMatching(context.Background(), rdb, globEscape(prefix)+"*")
		rdb.Close()
	})
	return rdb, prefix
}

// deleteMatching deletes the keys matching pattern on a single server, or on every master of a cluster
// (SCAN, then one DEL per key: keys of one node may lie in different slots), and returns how many it deleted.
func deleteMatching(ctx context.Context, rdb redis.UniversalClient, pattern string) (int, error) {
	var mu sync.Mutex
	total := 0
	del := func(ctx context.Context, node redis.Cmdable) error {
		var keys []string
		iter := node.Scan(ctx, 0, pattern, 1000).Iterator()
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		if err := iter.Err(); err != nil {
			return fmt.Errorf("scan %s: %w", pattern, err)
		}
		if len(keys) == 0 {
			return nil
		}
		cmds, err := node.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, k := range keys {
				p.Del(ctx, k)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("delete %s: %w", pattern, err)
		}
		n := 0
		for _, c := range cmds {
			n += int(c.(*redis.IntCmd).Val())
		}
		mu.Lock()
		total += n
		mu.Unlock()
		return nil
	}
	var err error
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error { return del(ctx, m) })
	} else {
		err = del(ctx, rdb)
	}
	return total, err
}

// globEscape quotes the characters SCAN MATCH treats as a pattern.
func globEscape(s string) string {
	var b strings.Builder
	for _, c := range s {
		if strings.ContainsRune(`*?[]\`, c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}
