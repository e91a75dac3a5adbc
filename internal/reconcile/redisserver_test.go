package reconcile_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

const redisServerBin = "/usr/bin/redis-server"

// redisServer is a throw-away redis-server of the test's own, on a free port in a temp dir, that the test can
// stop and start again. With persist it keeps an AOF (fsync on every write), so a restart brings the data
// back; without, a restart loses everything, as a Redis without persistence does.
type redisServer struct {
	t       testing.TB
	port    int
	dir     string
	persist bool
	cmd     *exec.Cmd
}

func startRedisServer(t testing.TB, persist bool) *redisServer {
	t.Helper()
	if _, err := os.Stat(redisServerBin); err != nil {
		t.Skipf("%s not found (apt-get install redis-server): this test restarts a real Redis", redisServerBin)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	s := &redisServer{t: t, port: port, dir: t.TempDir(), persist: persist}
	s.start()
	t.Cleanup(s.stop)
	return s
}

func (s *redisServer) addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

func (s *redisServer) start() {
	s.t.Helper()
	aof := "no"
	if s.persist {
		aof = "yes"
	}
	s.cmd = exec.Command(redisServerBin, "--port", strconv.Itoa(s.port), "--bind", "127.0.0.1", "--dir", s.dir,
		"--save", "", "--appendonly", aof, "--appendfsync", "always", "--maxmemory-policy", "noeviction",
		"--daemonize", "no", "--logfile", "")
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("start redis-server: %v", err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: s.addr(), MaxRetries: -1})
	defer rdb.Close()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err := rdb.Ping(ctx).Err()
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("redis-server on %s did not answer: %v", s.addr(), err)
		}
	}
}

// stop shuts the server down (SIGTERM: a clean shutdown, the AOF flushed) and waits for it to exit.
func (s *redisServer) stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
	s.cmd = nil
}

// client is a client that gives up quickly, so a stopped server shows as unreachable at once.
func (s *redisServer) client(t testing.TB) *redis.Client {
	rdb := redis.NewClient(&redis.Options{Addr: s.addr(), PoolSize: 128, MaxRetries: 1,
		DialTimeout: 300 * time.Millisecond, ReadTimeout: time.Second, WriteTimeout: time.Second})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}
