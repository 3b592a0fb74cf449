// Package matrix owns gpuimg's compatibility facts and the rules built on
// them: the embedded, sourced data (driver, CUDA, cuDNN, NCCL, PyTorch,
// TensorFlow, JAX, Python, OS, base images, GPUs), version and constraint
// parsing, the Stack type, its label (StackLabel, LabelValue,
// StackFromLabels, Tag, Summary) and its file (DecodeStack, JSONProblem), the one ordered list of frameworks
// (FrameworkNames), the driver judgement (DB.FloorsOf and
// DriverFloors.Judge, strict and under minor-version compatibility), the
// NVIDIA container runtime's NVIDIA_REQUIRE_* check against the CUDA a
// driver reports (DB.JudgeRuntime, ParseRequirement, DB.ReportedCUDA;
// RequireCUDA writes the value), the driver branches that know a GPU
// (DB.JudgeGPUDriver), the arch-coverage judgement
// (KernelCoverage, DB.CUDATargets), Resolve (constraints to one pinned
// stack, or an explanation) and CheckStack (does a stack run on a driver
// and GPU). validate, images and builder call these rules rather than
// keeping their own. It does no I/O beyond reading matrix files.
package matrix
