//go:build !race

package chaos

// raceBuild: the test runs without -race, and so do the fleet's binaries.
const raceBuild = false
