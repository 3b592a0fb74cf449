// Package verbs holds the workflows both gpuimg's commands and publish run
// over images and validate, each written once in go-containerregistry
// crane's shape (ctx, ref, spec, opts...): validate a reference, attach a
// report, find an accepted report, promote.
package verbs
