// Package examples holds example files for gpuimg (a gpuimg.yaml, a team's
// matrix rows, a nightly workflow running gpuimg matrix update --check) and
// the end-to-end demo (examples/demo); its test keeps the files valid.
package examples
