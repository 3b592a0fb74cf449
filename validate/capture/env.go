package capture

import (
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/gpuimg/gpuimg/validate"
)

// reShaping are the variables that shape a GPU stack: where CUDA and its
// libraries are, how NCCL and the frameworks behave, where models and
// caches live. Anything else (PATH, HOME, HOSTNAME, a shell's own) is not
// the environment's to restore.
var reShaping = regexp.MustCompile(`^(CUDA_[A-Z0-9_]+|LD_LIBRARY_PATH|LD_PRELOAD|NCCL_[A-Z0-9_]+|FI_[A-Z0-9_]+|HF_[A-Z0-9_]+|HUGGINGFACE_HUB_CACHE|TRANSFORMERS_[A-Z0-9_]+|TOKENIZERS_PARALLELISM|TORCH_[A-Z0-9_]+|PYTORCH_[A-Z0-9_]+|TORCHINDUCTOR_[A-Z0-9_]+|TRITON_[A-Z0-9_]+|XLA_[A-Z0-9_]+|TF_[A-Z0-9_]+|JAX_[A-Z0-9_]+|OMP_NUM_THREADS|MKL_[A-Z0-9_]+|CUBLAS_[A-Z0-9_]+|CUDNN_[A-Z0-9_]+|NVIDIA_TF32_OVERRIDE|PYTHONPATH|PIP_INDEX_URL|PIP_EXTRA_INDEX_URL|[A-Z0-9_]*(TOKEN|SECRET|KEY|PASSWORD)[A-Z0-9_]*)$`)

// baseEnv are set by NVIDIA's base images and by gpuimg's build; the
// build gives them again, so a capture does not repeat them.
var baseEnv = map[string]bool{"NVIDIA_REQUIRE_CUDA": true, "NVIDIA_VISIBLE_DEVICES": true, "NVIDIA_DRIVER_CAPABILITIES": true, "CUDA_VERSION": true, "NV_CUDA_CUDART_VERSION": true, "NV_CUDA_COMPAT_PACKAGE": true, "NVARCH": true, "PATH": true}

// shapingEnv keeps the variables of env (KEY=VALUE, later wins) that
// shape the stack and returns, apart, the names of those the secrets
// check flags (validate.EnvSecret), whose values are never kept. A
// variable named like a credential is looked at only to be dropped.
func shapingEnv(env []string) (keep map[string]string, dropped []string) {
	all := map[string]string{}
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if ok && k != "" {
			all[k] = v
		}
	}
	keep = map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(all)) {
		v := all[k]
		if baseEnv[k] || !reShaping.MatchString(k) {
			continue
		}
		if validate.EnvSecret(k+"="+v) != "" || strings.HasPrefix(k, "AWS_") && strings.Contains(k, "KEY") {
			dropped = append(dropped, k)
			continue
		}
		if strings.Contains(k, "TOKEN") || strings.Contains(k, "SECRET") || strings.Contains(k, "PASSWORD") {
			dropped = append(dropped, k)
			continue
		}
		keep[k] = v
	}
	if len(keep) == 0 {
		keep = nil
	}
	return keep, dropped
}
