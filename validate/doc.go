// Package validate reads what is really inside an image (Walk streams the
// layers with whiteouts applied; detectors find OS, CUDA, cuDNN, NCCL,
// Python, pip packages and the GPU architectures of device code), checks it
// against its label, the matrix, a driver and a GPU (Inspect), probes a
// real GPU and its frameworks (Probe, probe.py), and renders the Report as
// text, JSON or JUnit.
package validate
