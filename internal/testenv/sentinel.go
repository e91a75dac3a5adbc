package testenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga/internal/netport"
	"github.com/redis/go-redis/v9"
)

// redisStartTimeout bounds the wait for a started redis-server to listen.
const redisStartTimeout = 10 * time.Second

// sentinelReadyTimeout bounds the wait for the sentinels to know the replica and each other, and for a
// failover to end.
const sentinelReadyTimeout = 30 * time.Second

// RedisServer is a redis-server of the tests': on a free port of 127.0.0.1, nothing saved, in a directory of
// its own (its log is redis.log there), killed with the test binary (spawnChild) and, when a test started it,
// at that test's end.
type RedisServer struct {
	Addr string
	Dir  string

	args   []string // its command line, to start it again (Start)
	mu     sync.Mutex
	cmd    *exec.Cmd     // nil once killed or stopped
	exited chan struct{} // closed once the process has been waited for
}

// StartRedisServer starts a redis-server with args added to its command line (--requirepass, --user,
// --replicaof ...) and waits until it listens. With --cluster-enabled its cluster bus gets a free port of its
// own (--cluster-port) unless args name one.
func StartRedisServer(tb testing.TB, args ...string) *RedisServer {
	tb.Helper()
	port := StablePort(tb, "127.0.0.1")
	if slices.Contains(args, "--cluster-enabled") && !slices.Contains(args, "--cluster-port") {
		// The cluster bus listens on port+10000 unless told where, and another process may hold that one.
		args = append(args, "--cluster-port", strconv.Itoa(StablePort(tb, "127.0.0.1")))
	}
	return startRedis(tb, port, append([]string{"--port", strconv.Itoa(port)}, args...))
}

// StartRedisServerTLS starts a redis-server that speaks TLS alone (no plaintext port) with a server
// certificate of ca for 127.0.0.1, not asking clients for theirs; args are added as with StartRedisServer.
func StartRedisServerTLS(tb testing.TB, ca *CA, args ...string) *RedisServer {
	tb.Helper()
	port := StablePort(tb, "127.0.0.1")
	cert := ca.Server(tb, "localhost")
	return startRedis(tb, port, append([]string{"--port", "0", "--tls-port", strconv.Itoa(port),
		"--tls-cert-file", cert.CertPath, "--tls-key-file", cert.KeyPath, "--tls-ca-cert-file", ca.PEMPath,
		"--tls-auth-clients", "no"}, args...))
}

// startRedis runs redis-server with args (the first may be a configuration file) in a directory of the
// test's, and kills it at the test's end (launchRedis).
func startRedis(tb testing.TB, port int, args []string) *RedisServer {
	tb.Helper()
	s, err := launchRedis(tb.TempDir(), port, args)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.Kill() })
	return s
}

// launchRedis runs redis-server in dir with the options every test server has, then args (so that args may
// change them: --appendonly yes), and waits until port listens; a configuration file, when args has one, stays
// first. A server that exits before, or does not listen in time, is an error with its log (and is killed).
// The server dies with the test binary (spawnChild); nothing else stops it.
func launchRedis(dir string, port int, args []string) (*RedisServer, error) {
	var conf []string
	if len(args) > 0 && !strings.HasPrefix(args[0], "--") {
		conf, args = args[:1], args[1:]
	}
	s := &RedisServer{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), Dir: dir}
	s.args = slices.Concat(conf, []string{"--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir,
		"--logfile", filepath.Join(dir, "redis.log")}, args)
	if err := s.Start(); err != nil {
		return nil, err
	}
	return s, nil
}

// Start runs the server: at launch, and again after Stop or Kill, on its port, in its directory and with its
// arguments (what it saved, with --appendonly yes, it loads again). It waits until the server listens.
func (s *RedisServer) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return fmt.Errorf("start redis-server on %s: it is running", s.Addr)
	}
	cmd := exec.Command("redis-server", s.args...)
	if err := spawnChild(cmd); err != nil {
		return fmt.Errorf("start redis-server on %s: %w (is redis-server installed?)", s.Addr, err)
	}
	s.cmd, s.exited = cmd, make(chan struct{})
	go func(exited chan struct{}) {
		_ = cmd.Wait()
		close(exited)
	}(s.exited)

	deadline := time.Now().Add(redisStartTimeout)
	for {
		c, err := net.DialTimeout("tcp", s.Addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-s.exited:
			s.cmd = nil
			return fmt.Errorf("redis-server on %s exited at start: %s", s.Addr, s.logTail())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = s.signal(syscall.SIGKILL)
			return fmt.Errorf("redis-server on %s does not listen after %s: %v; %s", s.Addr, redisStartTimeout, err, s.logTail())
		}
	}
}

// Stop shuts the server down cleanly (SIGTERM: an append-only file is flushed first) and waits until it has
// exited, SIGKILLing it after redisStartTimeout; stopping a stopped server does nothing.
func (s *RedisServer) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return nil
	}
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stop redis-server %s: %w", s.Addr, err)
	}
	select {
	case <-s.exited:
		s.cmd = nil
		return nil
	case <-time.After(redisStartTimeout):
		return s.signal(syscall.SIGKILL)
	}
}

// Kill SIGKILLs the server and waits until it has exited; killing a killed server does nothing.
func (s *RedisServer) Kill() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.signal(syscall.SIGKILL)
}

// Pause stops the server's process (SIGSTOP) without ending it: it answers nothing, and a replica takes none of
// its master's writes, until Resume (SIGCONT).
func (s *RedisServer) Pause() error { return s.sendStopCont(syscall.SIGSTOP) }

// Resume continues a paused server (SIGCONT).
func (s *RedisServer) Resume() error { return s.sendStopCont(syscall.SIGCONT) }

func (s *RedisServer) sendStopCont(sig syscall.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return fmt.Errorf("signal %v to redis-server %s: not running", sig, s.Addr)
	}
	if err := s.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("signal %v to redis-server %s: %w", sig, s.Addr, err)
	}
	return nil
}

// signal sends sig to the running server and waits until it has exited (s.mu held).
func (s *RedisServer) signal(sig syscall.Signal) error {
	if s.cmd == nil {
		return nil
	}
	if err := s.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signal %v to redis-server %s: %w", sig, s.Addr, err)
	}
	<-s.exited
	s.cmd = nil
	return nil
}

// logTail is the end of the server's log, for a failure message.
func (s *RedisServer) logTail() string {
	b, err := os.ReadFile(filepath.Join(s.Dir, "redis.log"))
	if err != nil {
		return "no log: " + err.Error()
	}
	const most = 2000
	if len(b) > most {
		b = b[len(b)-most:]
	}
	return "log: " + string(b)
}

// Sentinel is a master, its replica and three sentinels monitoring the master under the name Master with a
// quorum of 2, each process on a free port: a test's own (StartSentinel), killed at its end, or the test
// binary's shared one (SharedSentinel), killed with the binary. A master is judged down after 1 s
// without an answer, so KillMaster's failover takes a few seconds.
type Sentinel struct {
	Master    string   // the name the sentinels monitor the master under (REDIS_SENTINEL_MASTER)
	Sentinels []string // their addresses (REDIS_SENTINEL_ADDRS)

	mu               sync.Mutex
	master, replica  *RedisServer
	sentinelServers  []*RedisServer
	masterAddrByName string
}

// StartSentinel starts a setup of the test's own (startSentinel), killed at the test's end.
func StartSentinel(tb testing.TB) *Sentinel {
	tb.Helper()
	s, err := startSentinel(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.stop)
	return s
}

// startSentinel starts a setup in dir (a directory for each server under it), each server on a free port,
// and waits until every sentinel knows the replica (synced with the master) and the two other sentinels:
// before that, a failover could not be agreed on. On an error the servers it started are killed; otherwise
// they run until stop or the test binary's end (spawnChild).
func startSentinel(dir string) (s *Sentinel, err error) {
	s = &Sentinel{Master: "m"}
	defer func() {
		if err != nil {
			s.stop()
		}
	}()
	replication := []string{"--repl-diskless-sync-delay", "0", "--repl-ping-replica-period", "1"}
	if s.master, err = startIn(dir, "master", nil, replication...); err != nil {
		return s, err
	}
	s.masterAddrByName = s.master.Addr
	replicaOf := append([]string{"--replicaof", "127.0.0.1", portOf(s.master.Addr)}, replication...)
	if s.replica, err = startIn(dir, "replica", nil, replicaOf...); err != nil {
		return s, err
	}
	// A sentinel rewrites its configuration file with what it learns: it needs a file of its own.
	conf := fmt.Sprintf("sentinel monitor %s 127.0.0.1 %s 2\n"+
		"sentinel down-after-milliseconds %[1]s 1000\n"+
		"sentinel failover-timeout %[1]s 5000\n", s.Master, portOf(s.master.Addr))
	for i := range 3 {
		srv, err := startIn(dir, "sentinel"+strconv.Itoa(i), []byte(conf), "--sentinel")
		if err != nil {
			return s, err
		}
		s.sentinelServers = append(s.sentinelServers, srv)
		s.Sentinels = append(s.Sentinels, srv.Addr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), sentinelReadyTimeout)
	defer cancel()
	if err := s.waitReady(ctx); err != nil {
		return s, fmt.Errorf("sentinel setup not ready: %w", err)
	}
	return s, nil
}

// startIn starts a redis-server on a free port in the directory name under dir, with the configuration file
// conf there first on its command line when conf is not nil.
func startIn(dir, name string, conf []byte, args ...string) (*RedisServer, error) {
	d := filepath.Join(dir, name)
	if err := os.Mkdir(d, 0o755); err != nil {
		return nil, err
	}
	port, err := netport.Free("127.0.0.1")
	if err != nil {
		return nil, err
	}
	if conf != nil {
		path := filepath.Join(d, name+".conf")
		if err := os.WriteFile(path, conf, 0o600); err != nil {
			return nil, err
		}
		args = append([]string{path}, args...)
	}
	return launchRedis(d, port, append(args, "--port", strconv.Itoa(port)))
}

// stop kills every server of the setup.
func (s *Sentinel) stop() {
	for _, srv := range append([]*RedisServer{s.master, s.replica}, s.sentinelServers...) {
		if srv != nil {
			_ = srv.Kill()
		}
	}
}

// Client returns a new failover client of the setup (the caller closes it): it asks the sentinels for the
// master, and again after a failover.
func (s *Sentinel) Client() *redis.Client {
	return redis.NewFailoverClient(&redis.FailoverOptions{MasterName: s.Master, SentinelAddrs: s.Sentinels, PoolSize: 256})
}

func portOf(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	return p
}

// MasterAddr is the address of the master: the replica once WaitFailover saw it promoted.
func (s *Sentinel) MasterAddr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.masterAddrByName
}

// ReplicaAddr is the address of the replica the setup started with.
func (s *Sentinel) ReplicaAddr() string { return s.replica.Addr }

// KillMaster SIGKILLs the master the setup started with.
func (s *Sentinel) KillMaster() error { return s.master.Kill() }

// Replica is the replica the setup started with (Pause it to hold back its master's writes: a failover after
// that loses them, as asynchronous replication does).
func (s *Sentinel) Replica() *RedisServer { return s.replica }

// WaitFailover waits until every sentinel names a master other than old and that server answers ROLE as a
// master, and returns its address.
func (s *Sentinel) WaitFailover(ctx context.Context, old string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, sentinelReadyTimeout)
	defer cancel()
	var last error
	for {
		addr, err := s.promoted(ctx, old)
		if err == nil {
			s.mu.Lock()
			s.masterAddrByName = addr
			s.mu.Unlock()
			return addr, nil
		}
		last = err
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("no failover from %s: %w", old, last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (s *Sentinel) promoted(ctx context.Context, old string) (string, error) {
	var agreed string
	for _, sentinel := range s.Sentinels {
		addr, err := sentinelMaster(ctx, sentinel, s.Master)
		if err != nil {
			return "", err
		}
		if addr == old {
			return "", fmt.Errorf("sentinel %s still names %s", sentinel, old)
		}
		if agreed != "" && addr != agreed {
			return "", fmt.Errorf("sentinels name %s and %s", agreed, addr)
		}
		agreed = addr
	}
	rdb := redis.NewClient(&redis.Options{Addr: agreed, MaxRetries: -1})
	defer rdb.Close()
	role, err := rdb.Do(ctx, "ROLE").Slice()
	if err != nil {
		return "", fmt.Errorf("ROLE of %s: %w", agreed, err)
	}
	if len(role) == 0 || role[0] != "master" {
		return "", fmt.Errorf("%s is not a master yet (ROLE %v)", agreed, role)
	}
	return agreed, nil
}

// waitReady waits until the replica is synced and each sentinel sees it and the two other sentinels.
func (s *Sentinel) waitReady(ctx context.Context) error {
	var last error
	for {
		if last = s.checkReady(ctx); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (s *Sentinel) checkReady(ctx context.Context) error {
	rdb := redis.NewClient(&redis.Options{Addr: s.master.Addr, MaxRetries: -1})
	defer rdb.Close()
	info, err := rdb.Info(ctx, "replication").Result()
	if err != nil {
		return fmt.Errorf("INFO of the master %s: %w", s.master.Addr, err)
	}
	if !strings.Contains(info, "port="+portOf(s.replica.Addr)+",state=online") {
		return fmt.Errorf("the replica %s is not online at the master %s", s.replica.Addr, s.master.Addr)
	}
	for _, sentinel := range s.Sentinels {
		sc := redis.NewSentinelClient(&redis.Options{Addr: sentinel, MaxRetries: -1})
		m, err := sc.Master(ctx, s.Master).Result()
		sc.Close()
		if err != nil {
			return fmt.Errorf("SENTINEL MASTER %s on %s: %w", s.Master, sentinel, err)
		}
		if m["num-slaves"] != "1" || m["num-other-sentinels"] != "2" {
			return fmt.Errorf("sentinel %s knows %s replica(s) and %s other sentinel(s), want 1 and 2",
				sentinel, m["num-slaves"], m["num-other-sentinels"])
		}
	}
	return nil
}

// sentinelMaster is the master's address as the sentinel at addr names it.
func sentinelMaster(ctx context.Context, addr, name string) (string, error) {
	sc := redis.NewSentinelClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer sc.Close()
	hp, err := sc.GetMasterAddrByName(ctx, name).Result()
	if err != nil {
		return "", fmt.Errorf("SENTINEL get-master-addr-by-name %s on %s: %w", name, addr, err)
	}
	if len(hp) != 2 {
		return "", fmt.Errorf("SENTINEL get-master-addr-by-name %s on %s: %v", name, addr, hp)
	}
	return net.JoinHostPort(hp[0], hp[1]), nil
}
