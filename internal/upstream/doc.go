// Package upstream owns reading upstream's machine-readable sources into a
// matrix overlay: PyTorch's all-variants wheel index with its PEP 658/714
// core metadata, PyPI's JSON API (JAX and its CUDA plugin wheels) and
// NVIDIA's CUDA redistrib manifests. Update compares what they publish
// with a loaded matrix.DB and returns only the rows the DB lacks, as a
// --matrix-file overlay (docs/matrix-data.md) that matrix.Load accepts.
//
// Package matrix itself does no I/O; this package does HTTP and nothing
// else: it never writes files, never prints and never reads the
// environment. Facts no machine-readable source gives (a CUDA release's
// driver floor, a wheel variant's stable/experimental label, compiled
// architectures) are reported in Overlay.Unfilled rather than guessed.
package upstream
