package testenv

import (
	"os"
	"testing"
)

// Need is something a test needs beyond what every `go test -short` run
// has: the unit tests need neither.
type Need int

const (
	// Slow tests start daemons, download Debian's packages, build
	// binaries or large inputs: `-short` skips them.
	Slow Need = iota
	// Root tests run runc, dockerd or podman, mount a tmpfs or call
	// apt-get install.
	Root
)

// Require skips t unless this run gives everything in needs. why says
// what the test does that needs them ("buildkitd runs build steps with
// runc"); the skip message names the missing need and why, so a skipped
// test in `go test -v` output tells how to run it. It is the one gate
// for every test that needs more than the unit tests do.
func Require(t testing.TB, why string, needs ...Need) {
	t.Helper()
	if msg := skipReason(testing.Short(), os.Geteuid() == 0, why, needs); msg != "" {
		t.Skip(msg)
	}
}

// skipReason is Require's rule: "" when nothing is missing, else the
// first missing need in the order given, with why.
func skipReason(short, root bool, why string, needs []Need) string {
	for _, n := range needs {
		switch {
		case n == Slow && short:
			return "-short: " + why + " (run without -short)"
		case n == Root && !root:
			return "needs root: " + why
		}
	}
	return ""
}
