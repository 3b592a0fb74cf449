// Package verbs holds the workflows both gpuimg's commands and publish run
// over images, validate and builder, each written once in
// go-containerregistry crane's shape (ctx, ref, spec, opts...): validate a
// reference, attach a report, find an accepted report, promote, dial or
// start a builder, build a stack.
package verbs
