//go:build !unix

package main

import "time"

// selfCPU is this process's CPU time: not read on this system.
func selfCPU() time.Duration { return 0 }
