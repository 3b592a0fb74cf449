package matrix

// TritonSince is the first torch release whose Linux wheels require
// triton: torch 2.0.0's METADATA has `Requires-Dist: triton (==2.0.0) ;
// platform_system == "Linux" and platform_machine == "x86_64"` (pip's
// output quoted in triton-lang/triton#1057 and zai-org/ChatGLM-6B#280),
// 2.1.0's `triton==2.1.0` (pytorch/builder#1533, pytorch/pytorch#111578)
// and every later release's the triton of its series (2.4: 3.0.0, 2.6:
// 3.2.0; the notes of torch.yaml's 2.4.0 and 2.6.0 rows). torch 1.13 has
// no torch.compile and requires no triton. JAX's and TensorFlow's CUDA
// extras require none: jax's cuda12 extra is jaxlib and
// jax-cuda12-plugin[with-cuda] (jax's setup.py), whose Pallas lowers
// through the Triton built into jaxlib, and tensorflow[and-cuda] lists
// NVIDIA's wheels only. Read 2026-12-01.
const TritonSince = "2.0"

// BringsTriton says the stack's frameworks install triton on Linux
// x86_64, whose kernels torch.compile JIT-compiles at first use: a torch
// release from TritonSince on. Triton then builds a C helper with the
// host's C compiler against Python's headers (triton/runtime/build.py),
// which an image must carry for torch.compile to work.
func (s Stack) BringsTriton() bool {
	fw, ok := s.Frameworks[FrameworkTorch]
	if !ok {
		return false
	}
	v, err := ParseVersion(fw.Version)
	if err != nil {
		return false
	}
	since, _ := ParseVersion(TritonSince)
	return !v.Less(since)
}
