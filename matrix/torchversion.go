package matrix

import "regexp"

// TorchCUDAPattern matches the CUDA line of torch/version.py as torch's
// wheels write it: "cuda: Optional[str] = '12.1'", "cuda = '11.8'" (torch
// before type annotations), "cuda = None" in a CPU build. Group 1 is None
// or the quoted version, group 2 the version. It is written in the syntax
// Go's regexp and Python's re share, since it is the one rule for that
// line on both sides: validate's detector reads images with TorchCUDA,
// and the builder renders the pattern into verify.py, which checks the
// torch installed during a build.
const TorchCUDAPattern = `(?m)^cuda(?:[ \t]*:[ \t]*[^=\n]+)?[ \t]*=[ \t]*(None|['"]([^'"\n]*)['"])`

var torchCUDA = regexp.MustCompile(TorchCUDAPattern)

// TorchCUDA reads the CUDA line of a torch/version.py: the CUDA version
// torch was built for, "" for a CPU build (cuda = None); found is false
// when the file has no such line.
func TorchCUDA(versionPy []byte) (cuda string, found bool) {
	m := torchCUDA.FindSubmatch(versionPy)
	if m == nil {
		return "", false
	}
	return string(m[2]), true
}
