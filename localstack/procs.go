package main

import "runtime"

// procsPerCPU is how many Go processors (GOMAXPROCS) the local stack runs per CPU when GOMAXPROCS is not
// set. Everything shares one Go scheduler here: the order API's HTTP handlers, the worker, and the Temporal
// server, whose state and the orders' both go through one SQLite connection each. Under a flood of buyers the
// handlers fill the run queues, and a goroutine that holds one of those connections waits behind them for
// every time slice it needs, while every order waits for the connection: with one processor per CPU the
// accepted orders nearly stop (126 in the 60 s of the 15,000 req/s run, BENCHMARKS.md). With four per CPU the
// kernel shares the CPUs between the processors' threads, and the holder runs within its share: 554 in the
// same run. A real deployment runs the Temporal server and the order API apart, and needs none of this.
const procsPerCPU = 4

// stackProcs is the GOMAXPROCS the local stack sets, or 0 to leave the Go runtime's (GOMAXPROCS is set).
func stackProcs(getenv func(string) string, cpus int) int {
	if getenv("GOMAXPROCS") != "" {
		return 0
	}
	return procsPerCPU * max(cpus, 1)
}

// setStackProcs applies stackProcs to this process.
func setStackProcs(getenv func(string) string) {
	if n := stackProcs(getenv, runtime.NumCPU()); n > 0 {
		runtime.GOMAXPROCS(n)
	}
}
