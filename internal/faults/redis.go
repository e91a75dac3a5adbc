package faults

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisServer is a redis-server process of its own, without persistence (no RDB, no AOF): a restart loses
// every key, as a crashed cache node does.
type RedisServer struct {
	mu   sync.Mutex
	port int
	dir  string
	cmd  *exec.Cmd
	// faults counts the restarts, stops and script flushes, for a test's figures.
	faults int
}

// StartRedis starts redis-server on 127.0.0.1:port (0: a free port) with dir as its working directory, and
// waits until it answers PING.
func StartRedis(ctx context.Context, port int, dir string) (*RedisServer, error) {
	if port == 0 {
		p, err := freePort()
		if err != nil {
			return nil, err
		}
		port = p
	}
	r := &RedisServer{port: port, dir: dir}
	if err := r.start(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

// freePort is a local port nothing listens on at the time of the call.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("faults: find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// Addr is the server's host:port.
func (r *RedisServer) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(r.port)) }

// Faults is how many restarts, stops and script flushes the server has been given.
func (r *RedisServer) Faults() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.faults
}

func (r *RedisServer) start(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	cmd := exec.Command("redis-server", "--port", strconv.Itoa(r.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", r.dir, "--maxmemory-policy", "noeviction")
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("faults: start redis-server on %d: %w", r.port, err)
	}
	r.cmd = cmd
	return waitRedis(ctx, r.Addr())
}

// waitRedis polls PING until the server answers or ctx ends.
func waitRedis(ctx context.Context, addr string) error {
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer rdb.Close()
	for {
		err := rdb.Ping(ctx).Err()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("faults: redis-server on %s did not answer: %w", addr, errors.Join(err, ctx.Err()))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// kill ends the process at once (SIGKILL: no save, as a crash) and waits for it.
func (r *RedisServer) kill() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil {
		return
	}
	_ = r.cmd.Process.Kill()
	_ = r.cmd.Wait()
	r.cmd = nil
}

func (r *RedisServer) count() {
	r.mu.Lock()
	r.faults++
	r.mu.Unlock()
}

// Restart kills the server and starts it again on the same port: every key is gone.
func (r *RedisServer) Restart(ctx context.Context) error {
	r.count()
	r.kill()
	return r.start(ctx)
}

// StopFor kills the server, leaves the port closed for d (or until ctx ends), and starts it again, empty.
func (r *RedisServer) StopFor(ctx context.Context, d time.Duration) error {
	r.count()
	r.kill()
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
	start, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	return r.start(start)
}

// ScriptFlush empties the server's Lua script cache: the next EVALSHA of every script answers NOSCRIPT.
func (r *RedisServer) ScriptFlush(ctx context.Context) error {
	r.count()
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr()})
	defer rdb.Close()
	if err := rdb.ScriptFlush(ctx).Err(); err != nil {
		return fmt.Errorf("faults: SCRIPT FLUSH on %s: %w", r.Addr(), err)
	}
	return nil
}

// Close kills the server.
func (r *RedisServer) Close() { r.kill() }
