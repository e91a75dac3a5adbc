//go:build !unix

package sale

import "time"

// processCPU is unknown here: the report leaves the tool's CPU out.
func processCPU() (time.Duration, bool) { return 0, false }
