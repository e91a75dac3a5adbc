package main

import "testing"

// oneVar is an environment with name set to v (when v is not empty) and nothing else.
func oneVar(name, v string) func(string) string {
	return func(n string) string {
		if n == name {
			return v
		}
		return ""
	}
}

func TestStackProcs(t *testing.T) {
	for _, c := range []struct {
		gomaxprocs string
		cpus, want int
	}{
		{"", 2, 8},
		{"", 1, 4},
		{"", 16, 64},
		{"", 0, 4},
		{"3", 2, 0}, // the user's GOMAXPROCS stands
	} {
		if got := stackProcs(oneVar("GOMAXPROCS", c.gomaxprocs), c.cpus); got != c.want {
			t.Errorf("GOMAXPROCS=%q, %d CPUs: %d, want %d", c.gomaxprocs, c.cpus, got, c.want)
		}
	}
}

func TestStackGC(t *testing.T) {
	if got := stackGC(oneVar("GOGC", "")); got != stackGCPercent {
		t.Errorf("GOGC unset: %d, want %d", got, stackGCPercent)
	}
	for _, v := range []string{"100", "off"} {
		if got := stackGC(oneVar("GOGC", v)); got != 0 {
			t.Errorf("GOGC=%s: %d, want 0 (the user's GOGC stands)", v, got)
		}
	}
}
