package redislab

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// The started servers must not outlive the process that started them, which may end without any hook of this
// package running (a test's os.Exit, a panic in another goroutine, a SIGKILL from go test's -timeout). Each
// redis-server is started with Pdeathsig SIGKILL: the kernel kills it when the thread that forked it ends.
// That is a thread, not the process, and the Go runtime may end a thread (one whose goroutine exits while
// locked to it), so every start is forked from one goroutine that locks its thread and never returns: that
// thread ends only with the process. A loop in sh polling the process's pid would work too, but its SIGKILL
// could reach a pid reused after the server it watched had died and been reaped.
var spawner struct {
	once sync.Once
	reqs chan spawnRequest
}

type spawnRequest struct {
	cmd  *exec.Cmd
	done chan error
}

// SpawnChild starts cmd (as cmd.Start does) so that the kernel kills it when this process ends. It sets
// cmd.SysProcAttr.
func SpawnChild(cmd *exec.Cmd) error {
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
