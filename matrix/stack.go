package matrix

// Stack is a fully pinned GPU software stack. Its JSON form is a public
// contract: it is what `gpuimg matrix resolve -o json` prints and what the
// builder stores in the image label dev.gpuimg.stack. Add fields; never
// rename or remove one.
type Stack struct {
	// CUDA is the x.y.z of the image's CUDA toolkit (the base image).
	CUDA string `json:"cuda" yaml:"cuda"`
	// CuDNN is the cuDNN the stack's frameworks load: the one bundled with
	// the framework wheels, else the one in the base image. Empty if none.
	CuDNN string `json:"cudnn,omitempty" yaml:"cudnn,omitempty"`
	// NCCL is the NCCL the frameworks load, when known.
	NCCL string `json:"nccl,omitempty" yaml:"nccl,omitempty"`
	// Python is the CPython minor version (3.10).
	Python string `json:"python" yaml:"python"`
	// PythonSource says where Python comes from: the OS's packages, or a
	// standalone CPython build (which, with its archives and their
	// sha256). Nil in labels written before it was recorded: the OS's.
	PythonSource *PythonSource `json:"python_source,omitempty" yaml:"python_source,omitempty"`
	// OS is the base image's OS as NVIDIA names it (ubuntu22.04).
	OS string `json:"os" yaml:"os"`
	// Flavor is runtime, devel or base.
	Flavor string `json:"flavor" yaml:"flavor"`
	// FlavorReason says why the resolver chose Flavor (DefaultFlavor).
	FlavorReason string `json:"flavor_reason,omitempty" yaml:"flavor_reason,omitempty"`
	// SystemCuDNN is true when the base image itself carries cuDNN (a
	// cudnn flavor), because a framework or the user needs it there.
	SystemCuDNN bool `json:"system_cudnn" yaml:"system_cudnn"`
	// BaseImage is the NVIDIA image tag to build FROM (the builder pins it
	// by digest).
	BaseImage string `json:"base_image" yaml:"base_image"`
	// BaseImageEOL is true when NVIDIA has marked BaseImage end of life:
	// it gets no updates and is deleted six months later.
	BaseImageEOL bool `json:"base_image_eol,omitempty" yaml:"base_image_eol,omitempty"`
	// MinDriver is the lowest Linux driver that runs everything in the
	// stack without relying on minor-version compatibility.
	MinDriver string `json:"min_driver" yaml:"min_driver"`
	// MinDriverBy says what sets MinDriver: the image's CUDA release
	// ("the image's CUDA 12.4.0"), or a wheel whose CUDA needs a higher
	// floor ("torch 2.5.1 cu124 wheels (CUDA 12.4, whose newest patch
	// 12.4.1 needs it)"). Empty in labels written before it was recorded.
	MinDriverBy string `json:"min_driver_by,omitempty" yaml:"min_driver_by,omitempty"`
	// MinDriverCompat is the lowest Linux driver that runs it under CUDA
	// minor-version compatibility (no PTX JIT, some APIs unavailable).
	MinDriverCompat string `json:"min_driver_compat" yaml:"min_driver_compat"`
	// RequireCUDA is the value for the image's NVIDIA_REQUIRE_CUDA.
	RequireCUDA string `json:"require_cuda" yaml:"require_cuda"`
	// GPUArchs are the GPU architectures (sm_XY) the stack has native
	// kernels (SASS) for; PTXArchs those it can JIT-compile from.
	GPUArchs []string `json:"gpu_archs" yaml:"gpu_archs"`
	PTXArchs []string `json:"ptx_archs,omitempty" yaml:"ptx_archs,omitempty"`
	// GPU is the GPU the stack was resolved for, if one was given; several
	// are separated by commas (A10G,L4).
	GPU string `json:"gpu,omitempty" yaml:"gpu,omitempty"`
	// Target is the targets: row (sagemaker/p5) whose driver and GPUs the
	// stack was resolved for, if one was given.
	Target string `json:"target,omitempty" yaml:"target,omitempty"`
	// Fabric is the multi-node fabric the stack was resolved for (build
	// --fabric): what the build adds for it, if anything. Nil: none asked.
	Fabric *StackFabric `json:"fabric,omitempty" yaml:"fabric,omitempty"`
	// Frameworks maps torch, tensorflow and jax to what is installed.
	Frameworks map[string]Framework `json:"frameworks" yaml:"frameworks"`
	// SupportedAlternative is, for a stack on an end-of-life base image,
	// the newest stack on a base NVIDIA still supports that fits the same
	// constraints (an older framework release, or another CUDA); nil when
	// the base is supported or no such stack fits. A note names it. It is
	// advice, not part of the stack: labels and publish's input digest
	// leave it out.
	SupportedAlternative *Stack `json:"supported_alternative,omitempty" yaml:"supported_alternative,omitempty"`
	// Notes explain choices a reader might not expect.
	Notes []string `json:"notes" yaml:"notes"`
	// Sources maps each source id the stack's facts came from to its URL.
	Sources map[string]string `json:"sources" yaml:"sources"`
	// PinsNotCompared names the frameworks sharing the environment whose
	// exact nvidia-* pins the matrix does not record, so the resolver could
	// not check that pip installs them together (a note says so too). It
	// is what the resolver knew, not part of the stack's contract.
	PinsNotCompared []string `json:"-" yaml:"-"`
}

// StackFabric is a fabric in a Stack and how the build adds its user
// space: OS packages for the stack's OS, or an installer; neither when the
// node installs it (HostDir).
type StackFabric struct {
	Name        string           `json:"name" yaml:"name"`
	Packages    []string         `json:"packages,omitempty" yaml:"packages,omitempty"`
	Installer   *FabricInstaller `json:"installer,omitempty" yaml:"installer,omitempty"`
	LibraryPath []string         `json:"library_path,omitempty" yaml:"library_path,omitempty"`
	// HostDir is where the node puts the fabric's plugin and NCCL for the
	// pods (GKE's TCPXO and gIB): the image carries none of it.
	HostDir string `json:"host_dir,omitempty" yaml:"host_dir,omitempty"`
}

// Framework is one framework in a Stack.
type Framework struct {
	Version string `json:"version" yaml:"version"`
	// CUDA is the major.minor the wheel variant was built for (12.1 for cu121).
	CUDA string `json:"cuda" yaml:"cuda"`
	// CuDNN and NCCL are what the wheels bundle or require.
	CuDNN string `json:"cudnn,omitempty" yaml:"cudnn,omitempty"`
	NCCL  string `json:"nccl,omitempty" yaml:"nccl,omitempty"`
	// Status is stable or experimental (PyTorch's labels for its variants).
	Status string `json:"status,omitempty" yaml:"status,omitempty"`
	// IndexURL is the pip index to install Packages from; empty means PyPI.
	IndexURL string `json:"index_url,omitempty" yaml:"index_url,omitempty"`
	// FindLinks is a page of wheel links pip needs as well (pip's
	// --find-links), where some of Packages' pins are served only there;
	// empty means none.
	FindLinks string `json:"find_links,omitempty" yaml:"find_links,omitempty"`
	// Packages are exact pip requirements (torch==2.3.1).
	Packages []string `json:"packages" yaml:"packages"`
	// Archs and PTX are the architectures compiled into the wheels, if known.
	Archs []string `json:"archs,omitempty" yaml:"archs,omitempty"`
	PTX   []string `json:"ptx,omitempty" yaml:"ptx,omitempty"`
}
