//go:build !linux

package config

// aboveHardLimits: limits apply on Linux only, which Check says.
func aboveHardLimits(Limits) []limitProblem { return nil }
