// Package capture turns an environment someone built by hand (a root
// filesystem, an image, a container) into a gpuimg.yaml that gpuimg build
// takes as it is, lists what cannot be reproduced, and compares two
// environments (Diff). It reads with validate's walker and detectors and
// resolves through the matrix; it builds nothing and opens no registry
// (the caller hands it a v1.Image: images.Open's, or DirImage's).
package capture
