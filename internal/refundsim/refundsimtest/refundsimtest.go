package refundsimtest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// listening is the line `paysim serve` prints on stdout once it listens, before its URL.
const listening = "paysim: refund provider listening on "

// Waits: for the listening line (a cold build of nothing: paysim is built before), and for the exit after SIGTERM.
const (
	startWait = 60 * time.Second
	stopWait  = 10 * time.Second
)

// binary is paysim, built once per test binary.
var binary struct {
	once sync.Once
	path string
	err  error
}

// Start runs `paysim serve -addr 127.0.0.1:0 <args...>` and returns its base URL once it listens; the test
// fails if it does not within a minute, showing what it printed. The process is stopped (SIGTERM, then
// waited for) when the test ends; what it printed is logged if the test failed.
func Start(t testing.TB, args ...string) (baseURL string) {
	t.Helper()
	bin := paysim(t)
	cmd := exec.Command(bin, append([]string{"serve", "-addr", "127.0.0.1:0"}, args...)...)
	out := &syncBuffer{}
	cmd.Stderr = out
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("paysim serve: %v", err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("paysim serve: %v", err)
	}
	found := make(chan string, 1)
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		scanLines(stdout, found, out)
	}()
	t.Cleanup(func() {
		stop(t, cmd, readDone)
		if t.Failed() {
			t.Logf("paysim serve %s printed:\n%s", strings.Join(args, " "), out)
		}
	})
	timer := time.NewTimer(startWait)
	defer timer.Stop()
	select {
	case u := <-found:
		return u
	case <-readDone:
		t.Fatalf("paysim serve %s exited before it listened:\n%s", strings.Join(args, " "), out)
	case <-timer.C:
		t.Fatalf("paysim serve %s did not say it listened within %s; it printed:\n%s", strings.Join(args, " "), startWait, out)
	}
	return ""
}

// scanLines sends the URL of the listening line to found and copies every other line to rest.
func scanLines(stdout io.Reader, found chan<- string, rest io.Writer) {
	sc := bufio.NewScanner(stdout)
	sent := false
	for sc.Scan() {
		if u, ok := strings.CutPrefix(sc.Text(), listening); ok && !sent {
			found <- u
			sent = true
			continue
		}
		fmt.Fprintln(rest, sc.Text())
	}
}

// stop sends SIGTERM and waits for the exit (a kill after stopWait); an exit other than 0 fails the test.
func stop(t testing.TB, cmd *exec.Cmd, readDone <-chan struct{}) {
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Errorf("paysim serve: SIGTERM: %v", err)
	}
	timer := time.NewTimer(stopWait)
	defer timer.Stop()
	select {
	case <-readDone:
	case <-timer.C:
		t.Errorf("paysim serve did not exit within %s of SIGTERM: killed", stopWait)
		_ = cmd.Process.Kill()
		<-readDone
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("paysim serve: %v", err)
	}
}

// paysim returns the paysim binary, built the first time.
func paysim(t testing.TB) string {
	t.Helper()
	binary.once.Do(func() { binary.path, binary.err = build() })
	if binary.err != nil {
		t.Fatal(binary.err)
	}
	return binary.path
}

// build builds ./paysim of the module the test runs in.
func build() (string, error) {
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(gomod))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("go env GOMOD: the test does not run in a module")
	}
	dir, err := binDir()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "paysim")
	cmd := exec.Command("go", "build", "-o", bin, "./paysim")
	cmd.Dir = filepath.Dir(mod)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./paysim: %w\n%s", err, out)
	}
	return bin, nil
}

// binDir is where paysim is built: beside the test binary when `go test` built it in its work directory
// (removed when go test ends), else a new temporary directory (left behind).
func binDir() (string, error) {
	if exe, err := os.Executable(); err == nil {
		dir := filepath.Dir(exe)
		if strings.HasPrefix(filepath.Base(filepath.Dir(dir)), "go-build") {
			return dir, nil
		}
	}
	dir, err := os.MkdirTemp("", "refundsimtest-")
	if err != nil {
		return "", fmt.Errorf("paysim's directory: %w", err)
	}
	return dir, nil
}

// syncBuffer is a bytes.Buffer the child's output goroutines and the test share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
