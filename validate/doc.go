// Package validate reads what is really inside an image (layers, CUDA,
// cuDNN, NCCL, Python packages, GPU kernels), runs the checks and the GPU
// probe, and renders the Report. (Work in progress: see the validation issues.)
package validate
