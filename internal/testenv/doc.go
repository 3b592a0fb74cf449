// Package testenv starts the real parts gpuimg's tests and demo run
// against — buildkitd (through builder.Local, the production code path),
// the distribution registry, a PEP 503 package index — builds fixture
// images and wheels, and stops everything it started, by PID.
//
// Binaries come from tools/go.mod (built into bin/ on first use); OS
// packages (runc, debootstrap) are installed with apt-get when missing.
package testenv
