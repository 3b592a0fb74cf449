// Package matrix owns gpuimg's compatibility facts and the resolver: the
// embedded, sourced data (driver, CUDA, cuDNN, NCCL, PyTorch, TensorFlow,
// JAX, Python, OS, base images, GPUs), version and constraint parsing, the
// Stack type, Resolve (constraints to one pinned stack, or an explanation)
// and CheckStack (does a stack run on a driver and GPU). It does no I/O
// beyond reading matrix files.
package matrix
