// Package e2e holds gpuimg's end-to-end tests: the CLI (cli.Main in the
// test's process, or the built binary where a test signals it) against
// real daemons on loopback — registries, buildkitd with runc, dockerd,
// podman, containerd — and real verifiers (cosign, skopeo, crane,
// slsa-verifier). The tests share one environment (sharedEnv: a
// registry, the apt repository, one buildkitd and its cache), started by
// the first test that needs it and stopped after the last; a test that
// empties or kills its buildkitd, or pushes a base differently, starts
// its own (ownEnv). They need root and skip under -short. internal/cli's
// own tests are the wiring: flags to options, rendering, exit codes.
package e2e
