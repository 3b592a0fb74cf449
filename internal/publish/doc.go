// Package publish orchestrates nightly publishing over a matrix of stacks:
// a publish file (publish.yaml) expands into variants through the resolver,
// and each variant is built, validated, pushed, mirrored and promoted, with
// a report a person reads. It holds no rule of its own: validity is the
// resolver's (matrix), building is builder's, validation is validate's and
// moving images is images'.
package publish
