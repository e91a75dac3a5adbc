// Package config reads the settings of the worker, the starter and the local stack from the environment
// into one struct, validated at start with errors that name the variable.
//
// May import: the standard library only (no net/http, no database/sql); nothing of the module (checked by
// internal/layers).
package config
