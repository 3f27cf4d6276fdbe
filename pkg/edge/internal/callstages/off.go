//go:build !benchprofile

package callstages

// Begin starts timing a call (benchmark builds only).
func Begin() {}

// Mark notes that the timed call reached s (benchmark builds only).
func Mark(Stage) {}

// End ends the timed call (benchmark builds only).
func End() {}
