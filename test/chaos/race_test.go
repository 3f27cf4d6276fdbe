//go:build race

package chaos

// raceBuild: the test runs with -race, so the fleet's binaries are built
// with it too.
const raceBuild = true
