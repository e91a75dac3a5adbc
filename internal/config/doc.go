// Package config reads the settings of the worker, the starter and the local stack from the environment
// into one struct, validated at start with errors that name the variable.
package config
