// Package gpuprobe probes the machine it runs on: the NVIDIA driver and
// GPUs through NVML (loaded without cgo), what the image's Python
// frameworks see of them (probe.py, one child process per framework,
// supervised from Go), and benchmark figures; it judges all of it against
// the matrix (health, sharing, links, the driver floor, kernel coverage,
// datasheet peaks) and accepts or rejects an instance against a baseline or
// the matrix's references. It reports facts and verdicts as a Result;
// validate wraps a Result into a GPU Report.
package gpuprobe

import "github.com/gpuimg/gpuimg/matrix"

// Status is a check's status (matrix.Status).
type Status = matrix.Status

// Check is one judged finding (matrix.Finding).
type Check = matrix.Finding
