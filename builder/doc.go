// Package builder turns a resolved matrix.Stack plus user extras into a
// build definition and solves it on a BuildKit daemon: daemon discovery,
// base image pinning, outputs, cache and progress. It knows BuildKit and
// nothing of validation. (Work in progress: see the builder issue.)
package builder
