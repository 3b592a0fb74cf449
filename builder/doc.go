// Package builder turns a resolved matrix.Stack plus a team's extras into a
// Dockerfile (Dockerfile, pure) and solves it on a BuildKit daemon
// (Prepare, Build): base image pinned by digest through images.PinBase,
// labels, outputs, cache, secrets and progress. Local starts, reuses and
// stops a buildkitd of gpuimg's own. It knows BuildKit and nothing of
// validation.
package builder
