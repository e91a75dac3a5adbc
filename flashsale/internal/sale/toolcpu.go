package sale

import (
	"fmt"
	"net"
	"net/url"
	"runtime"
	"time"
)

// ToolCPU is the CPU the tool itself spent while it fired buyers. Against a stack on the same machine (the
// local stack, a laptop, one small VM) every core-second the tool takes is one the stack does not get, and
// the answers' latencies include the wait for it: the report says how much that was.
type ToolCPU struct {
	// Seconds is the user + system CPU of the tool's process from the first buyer to the end of the firing
	// (the buyers, their follow-ups, the stock samples, the progress). A test that runs the stack in the
	// tool's process counts the stack's too.
	Seconds float64 `json:"seconds"`
	// Requests counts the requests timed while firing (buyers, resends, follow-ups).
	Requests int64 `json:"requests"`
	// Cores is the machine's logical CPUs (runtime.NumCPU).
	Cores int `json:"cores"`
}

// startToolCPU reads the process's CPU now; the function it returns reads it again and gives what was spent in
// between over requests (nil when cpu cannot say).
func startToolCPU(cpu func() (time.Duration, bool)) func(requests int64) *ToolCPU {
	before, ok := cpu()
	return func(requests int64) *ToolCPU {
		after, ok2 := cpu()
		if !ok || !ok2 {
			return nil
		}
		return &ToolCPU{Seconds: (after - before).Seconds(), Requests: requests, Cores: runtime.NumCPU()}
	}
}

// PerRequest is the tool's CPU per request timed while firing (0 without requests).
func (c ToolCPU) PerRequest() time.Duration {
	if c.Requests == 0 {
		return 0
	}
	return time.Duration(c.Seconds / float64(c.Requests) * float64(time.Second))
}

// Share is the part of the machine's CPU the tool took over fireSeconds (1 = every core, the whole time).
func (c ToolCPU) Share(fireSeconds float64) float64 {
	if fireSeconds <= 0 || c.Cores <= 0 {
		return 0
	}
	return c.Seconds / fireSeconds / float64(c.Cores)
}

// sharedMachineShare is the share of a machine's CPU past which a tool firing at a stack on the same machine
// (a loopback target) warns that the stack's figures are not the stack's alone.
const sharedMachineShare = 0.2

// lines is what the summary and the page say of the tool's CPU: how much, and a warning when the target is on
// this machine and the tool took more than sharedMachineShare of it.
func (c ToolCPU) lines(fireSeconds float64, target string) []string {
	share := c.Share(fireSeconds)
	out := []string{fmt.Sprintf("the tool itself: %.1f s of CPU while firing for %.1f s (%.0f %% of this machine's %d cores), %s per request",
		c.Seconds, fireSeconds, share*100, c.Cores, c.PerRequest().Round(time.Microsecond))}
	if share > sharedMachineShare && loopback(target) {
		out = append(out, fmt.Sprintf("the target is on this machine (%s): if the stack runs here, the tool took %.0f %% of its CPU, so the stack's rates are lower and its latencies higher than on a machine of its own; run the tool elsewhere for the stack's own figures",
			target, share*100))
	}
	return out
}

// toolCPULines is the report's lines on the tool's CPU (none when the run did not measure it).
func (rep *Report) toolCPULines() []string {
	if rep.ToolCPU == nil {
		return nil
	}
	return rep.ToolCPU.lines(rep.FireSeconds, rep.Param("target"))
}

// loopback reports whether the target URL names this machine (localhost or a loopback address).
func loopback(target string) bool {
	u, err := url.Parse(target)
	if err != nil {
		return false
	}
	host := u.Hostname()
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
