//go:build !race

package testenv

// RaceEnabled: see race_on.go.
const RaceEnabled = false
