// Package upstream owns reading upstream's machine-readable sources into a
// matrix overlay: PyTorch's all-variants wheel index with its PEP 658/714
// core metadata, PyPI's JSON API (JAX and its CUDA plugin wheels) and
// NVIDIA's CUDA redistrib manifests. Update compares what they publish
// with a loaded matrix.DB and returns only the rows the DB lacks, as a
// --matrix-file overlay (docs/matrix-data.md) that matrix.Load accepts.
//
// Package matrix itself does no I/O; this package does HTTP and, for
// matrix update --write, reads and writes the data directory of a gpuimg
// checkout (FindData, LoadData, WriteData in datadir.go: folded files are
// staged, loaded, then renamed into place, and a *DataError names the
// step that failed). It writes no other file, never prints and never
// reads the environment (the caller passes the directory to start from). Facts no machine-readable source gives (a CUDA release's
// driver floor, a wheel variant's stable/experimental label, compiled
// architectures) are reported in Overlay.Unfilled rather than guessed.
package upstream
