package main

import (
	"runtime"
	"runtime/debug"
)

// procsPerCPU is how many Go processors (GOMAXPROCS) the local stack runs per CPU when GOMAXPROCS is not
// set. Everything shares one Go scheduler here: the order API's HTTP handlers, the worker, and the Temporal
// server, whose state and the orders' both go through one SQLite connection each. Under a flood of buyers the
// handlers fill the run queues, and a goroutine that holds one of those connections waits behind them for
// every time slice it needs, while every order waits for the connection: with one processor per CPU the
// accepted orders nearly stop (126 in the 60 s of the 15,000 req/s run, BENCHMARKS.md). With four per CPU the
// kernel shares the CPUs between the processors' threads, and the holder runs within its share: 554 in the
// same run. A real deployment runs the Temporal server and the order API apart, and needs none of this.
const procsPerCPU = 4

// stackGCPercent is the local stack's GOGC when GOGC is not set. The in-process Temporal server's heap is most
// of the process's, and every collection marks all of it, however little the order API's handlers allocated
// since the last: the collector took 12 % of the stack's CPU in pair 5's benchmark without a flood and 16 %
// during a flood of sold-out buyers. At 300 the heap may grow to four times what is live before the next
// collection instead of twice: 4 % and 6 %, for about 400 MB more at the peak (1.06 GB against 0.64 GB
// resident in that benchmark). Pair 5's ratio (accepted orders during the flood against without it) moved
// less than its spread between runs (75–85 % in six runs against 75–80 % in four); BENCHMARKS.md, pair 5.
const stackGCPercent = 300

// stackProcs is the GOMAXPROCS the local stack sets, or 0 to leave the Go runtime's (GOMAXPROCS is set).
func stackProcs(getenv func(string) string, cpus int) int {
	if getenv("GOMAXPROCS") != "" {
		return 0
	}
	return procsPerCPU * max(cpus, 1)
}

// stackGC is the GOGC the local stack sets, or 0 to leave the Go runtime's (GOGC is set).
func stackGC(getenv func(string) string) int {
	if getenv("GOGC") != "" {
		return 0
	}
	return stackGCPercent
}

// setStackRuntime applies stackProcs and stackGC to this process.
func setStackRuntime(getenv func(string) string) {
	if n := stackProcs(getenv, runtime.NumCPU()); n > 0 {
		runtime.GOMAXPROCS(n)
	}
	if p := stackGC(getenv); p > 0 {
		debug.SetGCPercent(p)
	}
}
