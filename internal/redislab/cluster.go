package redislab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ordersaga/ordersaga/internal/config"
	"github.com/ordersaga/ordersaga/internal/netport"
	"github.com/redis/go-redis/v9"
)

// ReadyTimeout bounds the wait for a started cluster to cover every slot, as Start waits for it.
const ReadyTimeout = 90 * time.Second

// Cluster is a Redis Cluster: one this process started (Start), whose nodes it can kill and restart, or one
// named by its seeds (Existing), only used, never stopped.
type Cluster struct {
	seeds    []string
	dir      string // "" for a cluster this process did not start
	masters  int    // of a started cluster
	replicas int    // per master, of a started cluster

	mu    sync.Mutex
	nodes map[string]*node // by address; nil for a cluster this process did not start
}

// node is one redis-server of a started cluster.
type node struct {
	port, busPort int
	dir           string
	cmd           *exec.Cmd
	exited        chan struct{} // closed once the process has been waited for
}

// Existing is the cluster whose seeds are given (empty and blank entries are dropped): used, never stopped.
func Existing(seeds []string) *Cluster {
	var out []string
	for _, a := range seeds {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return &Cluster{seeds: out}
}

// Addrs are the cluster's seeds: every node's address for a started cluster, the given seeds otherwise.
func (c *Cluster) Addrs() []string { return append([]string(nil), c.seeds...) }

// Dir is the temporary directory of a started cluster's nodes ("" for an existing cluster).
func (c *Cluster) Dir() string { return c.dir }

// Client returns a new cluster client of the cluster (the caller closes it). Its map of the slots is reloaded
// as the processes' is (config.RedisClusterStateReload), so that it follows a failover as they do.
func (c *Cluster) Client() *redis.ClusterClient {
	return redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), PoolSize: 256,
		ClusterStateReloadInterval: config.RedisClusterStateReload})
}

// Start starts masters*(1+replicas) nodes, joins them with redis-cli --cluster create (replicas is its
// --cluster-replicas: replicas of each master) and waits until every node says the cluster is ok with every
// slot covered and sees the masters and replicas asked for, each replica synced. redis-cli needs 3 masters at
// least. Stop ends it; the nodes also die with this process.
func Start(ctx context.Context, masters, replicas int) (c *Cluster, err error) {
	if masters < 3 {
		return nil, fmt.Errorf("redis cluster: masters = %d, want at least 3 (redis-cli --cluster create)", masters)
	}
	if replicas < 0 {
		return nil, fmt.Errorf("redis cluster: replicas = %d per master, want 0 or more", replicas)
	}
	dir, err := os.MkdirTemp("", "ordersaga-redis-cluster-")
	if err != nil {
		return nil, err
	}
	if err := RemoveWhenGone(dir); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	c = &Cluster{dir: dir, masters: masters, replicas: replicas, nodes: map[string]*node{}}
	defer func() {
		if err != nil {
			c.Stop()
		}
	}()
	for i := range masters * (1 + replicas) {
		port, err := netport.Free("127.0.0.1")
		if err != nil {
			return nil, err
		}
		bus, err := netport.Free("127.0.0.1")
		if err != nil {
			return nil, err
		}
		n := &node{port: port, busPort: bus, dir: filepath.Join(dir, strconv.Itoa(i))}
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
	ctx, cancel := context.WithTimeout(ctx, ReadyTimeout)
	defer cancel()
	for _, addr := range c.seeds {
		if err := waitPing(ctx, addr); err != nil {
			return nil, err
		}
	}
	args := append([]string{"--cluster", "create"}, c.seeds...)
	args = append(args, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
	if out, err := exec.CommandContext(ctx, "redis-cli", args...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("redis-cli --cluster create: %w\n%s", err, out)
	}
	if err := c.WaitReady(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

func (n *node) addr() string { return "127.0.0.1:" + strconv.Itoa(n.port) }

// start runs the node's redis-server. Its output goes to a log file in its directory (not to the test
// binary's stdout: go test waits for every holder of that pipe to close it). A replica syncs at once
// (repl-diskless-sync-delay 0), and its master pings it every second, so that its replication offset
// leaves 0 within a second of an empty sync: WaitReady waits for that (CLUSTER SLOTS lists no replica at
// offset 0), and with the default period of 10 s every start would wait that long.
func (n *node) start() error {
	cmd := exec.Command("redis-server",
		"--bind", "127.0.0.1", "--port", strconv.Itoa(n.port), "--cluster-port", strconv.Itoa(n.busPort),
		"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "2000",
		"--save", "", "--appendonly", "no", "--repl-diskless-sync-delay", "0", "--repl-ping-replica-period", "1", "--dir", n.dir, "--logfile", filepath.Join(n.dir, "redis.log"))
	if err := SpawnChild(cmd); err != nil {
		return fmt.Errorf("start redis-server on %s: %w", n.addr(), err)
	}
	n.cmd, n.exited = cmd, make(chan struct{})
	go func(exited chan struct{}) {
		_ = cmd.Wait()
		close(exited)
	}(n.exited)
	return nil
}

// RemoveWhenGone removes dir once this process has ended: a shell in a process group of its own (so a ^C to
// the process's group does not stop it first) polls the pid and then deletes the directory. Nothing of this
// process may run at its end to do it (Stop removes it at once); a reused pid only delays the removal.
func RemoveWhenGone(dir string) error {
	script := `while kill -0 "$1" 2>/dev/null; do sleep 1; done; rm -rf "$2"`
	cmd := exec.Command("sh", "-c", script, "sh", strconv.Itoa(os.Getpid()), dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start the remover of %s: %w", dir, err)
	}
	go func() { _ = cmd.Wait() }() // reaps it if this process outlives it (it never should)
	return nil
}

// Stop kills every node of a started cluster and removes its directory; on an existing cluster it does
// nothing.
func (c *Cluster) Stop() {
	if c.nodes == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.nodes {
		if n.cmd != nil {
			_ = n.cmd.Process.Kill()
			<-n.exited
			n.cmd = nil
		}
	}
	_ = os.RemoveAll(c.dir)
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

func (c *Cluster) node(addr string) (*node, error) {
	if c.nodes == nil {
		return nil, fmt.Errorf("redis cluster node %s: the cluster was not started by this process", addr)
	}
	n, ok := c.nodes[addr]
	if !ok {
		return nil, fmt.Errorf("redis cluster node %s: no such node (nodes: %v)", addr, c.seeds)
	}
	return n, nil
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

// Pause stops the node at addr with SIGSTOP: it keeps its sockets open and answers nothing, as a node that
// hangs or sits behind a partition would. Its kernel still accepts what peers send it, up to the socket
// buffers. Resume continues it.
func (c *Cluster) Pause(addr string) error { return c.signal(addr, syscall.SIGSTOP, "pause") }

// Resume continues a node that Pause stopped (SIGCONT).
func (c *Cluster) Resume(addr string) error { return c.signal(addr, syscall.SIGCONT, "resume") }

func (c *Cluster) signal(addr string, sig syscall.Signal, what string) error {
	n, err := c.node(addr)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if n.cmd == nil {
		return fmt.Errorf("%s %s: not running", what, addr)
	}
	if err := n.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("%s %s: %w", what, addr, err)
	}
	return nil
}
