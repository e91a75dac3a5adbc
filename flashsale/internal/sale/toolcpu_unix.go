//go:build unix

package sale

import (
	"syscall"
	"time"
)

// processCPU is the user + system CPU the process has used so far (getrusage(RUSAGE_SELF)); ok is false
// when the system does not say.
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
