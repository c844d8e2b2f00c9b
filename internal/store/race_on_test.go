//go:build race

package store

// raceDetector says the tests run with -race (make test's default), which
// makes values escape that otherwise stay on the stack: allocation budgets
// allow for it.
const raceDetector = true
