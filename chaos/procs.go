package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// proc is one OS process of the topology: its binary, arguments and environment, so it can be started again
// after a kill, and its log file (appended to across restarts).
type proc struct {
	name string
	bin  string
	args []string
	env  []string
	log  string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	status error // the last exit's Wait error
}

// start starts the process with extra environment variables added to its own.
func (p *proc) start(extra ...string) error {
	f, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("start %s: log: %w", p.name, err)
	}
	cmd := exec.Command(p.bin, p.args...)
	cmd.Env = childEnv(os.Environ(), p.env, extra)
	cmd.Stdout, cmd.Stderr = f, f
	// Its own process group (a Ctrl-C of the chaos run is not delivered to it; the run stops it), and killed
	// with the chaos run if that dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("start %s (%s): %w", p.name, p.bin, err)
	}
	exited := make(chan struct{})
	p.mu.Lock()
	p.cmd, p.exited = cmd, exited
	p.mu.Unlock()
	go func() {
		err := cmd.Wait()
		f.Close()
		p.mu.Lock()
		p.status = err
		p.mu.Unlock()
		close(exited)
	}()
	return nil
}

// childEnv is a process's environment: base with each later list's KEY=VALUE set over it, in order; an empty
// VALUE removes KEY (the configuration reads an empty variable as unset, but a test can only see the absent).
func childEnv(base []string, sets ...[]string) []string {
	var keys []string
	vals := map[string]string{}
	for _, list := range append([][]string{base}, sets...) {
		for _, kv := range list {
			k, v, _ := strings.Cut(kv, "=")
			if _, ok := vals[k]; !ok {
				keys = append(keys, k)
			}
			vals[k] = v
		}
	}
	var out []string
	for _, k := range keys {
		if v := vals[k]; v != "" {
			out = append(out, k+"="+v)
		}
	}
	return out
}

// done is closed when the current run of the process has exited.
func (p *proc) done() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exited
}

// killedBySIGKILL reports whether the last run ended by SIGKILL.
func (p *proc) killedBySIGKILL() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	var ee *exec.ExitError
	if !errors.As(p.status, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// exitStatus is the last run's Wait error (nil: it exited 0).
func (p *proc) exitStatus() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.status
}

// kill sends SIGKILL to the process (this process started it; nothing else is signalled) and waits for it.
func (p *proc) kill() error {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	if cmd == nil {
		return nil
	}
	select {
	case <-exited:
		return nil
	default:
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kill %s (pid %d): %w", p.name, cmd.Process.Pid, err)
	}
	<-exited
	return nil
}

// stop asks the process to exit (SIGTERM), and kills it after grace.
func (p *proc) stop(grace time.Duration) {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(grace):
		_ = p.kill()
	}
}

// running reports whether the current run has not exited.
func (p *proc) running() bool {
	select {
	case <-p.done():
		return false
	default:
		return true
	}
}

// buildBinaries builds the starter, worker and paysim commands once into dir.
func buildBinaries(ctx context.Context, dir string) (starter, worker, paysim string, err error) {
	root, err := moduleRoot()
	if err != nil {
		return "", "", "", err
	}
	starter, worker, paysim = filepath.Join(dir, "starter"), filepath.Join(dir, "worker"), filepath.Join(dir, "paysim")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", dir+string(filepath.Separator), "./starter", "./worker", "./paysim")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", "", "", fmt.Errorf("go build ./starter ./worker ./paysim: %w\n%s", err, out)
	}
	return starter, worker, paysim, nil
}

// moduleRoot is the directory of go.mod, found from the working directory upwards.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("module root: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("module root: no go.mod above the working directory")
		}
		dir = parent
	}
}

// freePort returns a port on 127.0.0.1 that nothing listens on right now.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// waitTCP waits until addr accepts a connection, the process exits, or limit passes.
func waitTCP(ctx context.Context, addr string, p *proc, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			return conn.Close()
		}
		if p != nil && !p.running() {
			return fmt.Errorf("%s exited before it listened on %s (log: %s)", p.name, addr, p.log)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s did not listen on %s within %s", procName(p), addr, limit)
}

func procName(p *proc) string {
	if p == nil {
		return "server"
	}
	return p.name
}
