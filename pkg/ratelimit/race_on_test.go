//go:build race

package ratelimit_test

// raceEnabled shortens the churn test under the race detector.
const raceEnabled = true
