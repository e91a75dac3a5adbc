package faults

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisServer is a redis-server process of its own, without persistence (no RDB, no AOF): a restart loses
// every key, as a crashed cache node does, unless it is a RestartFrom an earlier Snapshot.
type RedisServer struct {
	mu   sync.Mutex
	port int
	dir  string
	cmd  *exec.Cmd
	// faults counts the restarts, stops and script flushes, for a test's figures.
	faults int
	// snapshots numbers the snapshot files; comebacks are the keys each start after the first loaded.
	snapshots int
	started   bool
	comebacks []int64
}

// dumpFile is the file redis-server loads at start from its working directory (its default dbfilename) and
// SAVE writes.
const dumpFile = "dump.rdb"

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
	if _, err := r.start(ctx, ""); err != nil {
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

// Faults is how many restarts (empty or from a snapshot), stops and script flushes the server has been given.
func (r *RedisServer) Faults() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.faults
}

// Comebacks are the keys the server loaded at each start after the first, in order: 0 for a restart that
// came back empty, the snapshot's keys for a RestartFrom. Read from the server itself (INFO persistence,
// rdb_last_load_keys_loaded), so a test can tell that its fault happened as named.
func (r *RedisServer) Comebacks() []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.comebacks)
}

// start starts the server, empty (snapshot "") or loading the snapshot file, waits until it answers PING
// (a server still loading answers LOADING), and returns the keys it loaded.
func (r *RedisServer) start(ctx context.Context, snapshot string) (int64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	dump := filepath.Join(r.dir, dumpFile)
	if err := os.Remove(dump); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, fmt.Errorf("faults: start redis-server empty: %w", err)
	}
	if snapshot != "" {
		if err := copyFile(snapshot, dump); err != nil {
			return 0, fmt.Errorf("faults: start redis-server from %s: %w", snapshot, err)
		}
	}
	cmd := exec.Command("redis-server", "--port", strconv.Itoa(r.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", r.dir, "--dbfilename", dumpFile, "--maxmemory-policy", "noeviction")
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("faults: start redis-server on %d: %w", r.port, err)
	}
	r.cmd = cmd
	if err := waitRedis(ctx, r.Addr()); err != nil {
		return 0, err
	}
	loaded, err := keysLoaded(ctx, r.Addr())
	if err != nil {
		return 0, err
	}
	if snapshot != "" {
		// Loaded: a later start without a snapshot must not find it.
		if err := os.Remove(dump); err != nil {
			return 0, fmt.Errorf("faults: remove the loaded snapshot: %w", err)
		}
	}
	if r.started {
		r.comebacks = append(r.comebacks, loaded)
	}
	r.started = true
	return loaded, nil
}

// keysLoaded is the number of keys the server at addr loaded from its snapshot file at start.
func keysLoaded(ctx context.Context, addr string) (int64, error) {
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	info, err := rdb.Info(ctx, "persistence").Result()
	if err != nil {
		return 0, fmt.Errorf("faults: INFO persistence on %s: %w", addr, err)
	}
	const field = "rdb_last_load_keys_loaded:"
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return 0, fmt.Errorf("faults: INFO persistence on %s: %s%q: %w", addr, field, v, err)
			}
			return n, nil
		}
	}
	return 0, fmt.Errorf("faults: INFO persistence on %s has no %s (redis-server 7.0 or later reports it)", addr, field)
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o600)
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
	_, err := r.start(ctx, "")
	return err
}

// Snapshot saves the server's data now (SAVE: every key as of this moment) into a file of the server's
// directory and returns its path, for a later RestartFrom.
func (r *RedisServer) Snapshot(ctx context.Context) (string, error) {
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr()})
	defer rdb.Close()
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := rdb.Save(ctx).Err(); err != nil {
		return "", fmt.Errorf("faults: SAVE on %s: %w", r.Addr(), err)
	}
	r.snapshots++
	path := filepath.Join(r.dir, fmt.Sprintf("snapshot-%d.rdb", r.snapshots))
	if err := os.Rename(filepath.Join(r.dir, dumpFile), path); err != nil {
		return "", fmt.Errorf("faults: keep the snapshot: %w", err)
	}
	return path, nil
}

// RestartFrom kills the server and starts it again on the same port from a Snapshot: every key as it was
// when the snapshot was taken (a cache node restored from an old backup). It returns the keys loaded.
func (r *RedisServer) RestartFrom(ctx context.Context, snapshot string) (int64, error) {
	r.count()
	r.kill()
	return r.start(ctx, snapshot)
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
	_, err := r.start(start, "")
	return err
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
