package builder

import (
	"reflect"
	"testing"
)

func TestStageOutputs(t *testing.T) {
	out, ren := stageOutputs([]string{"type=oci,dest=/x/img.tar", "type=local,dest=/x/dir", "type=image,name=r/x:y,push=true", "type=docker,dest=-"})
	want := []string{"type=oci,dest=/x/.img.tar.gpuimg-partial", "type=local,dest=/x/dir", "type=image,name=r/x:y,push=true", "type=docker,dest=-"}
	if !reflect.DeepEqual(out, want) || len(ren) != 1 || ren["/x/.img.tar.gpuimg-partial"] != "/x/img.tar" {
		t.Errorf("%v %v", out, ren)
	}
}

// TestIsStep: only the Dockerfile's own steps count as steps (cached or
// not); the frontend's other vertices would inflate both counts.
func TestIsStep(t *testing.T) {
	for name, want := range map[string]bool{
		"[1/4] FROM docker.io/nvidia/cuda:12.2.2-runtime-ubuntu22.04@sha256:1111": true,
		"[2/4] RUN --mount=type=cache,id=gpuimg-pip pip install torch==2.3.1":     true,
		"[stage-1 3/5] COPY --from=0 /opt/venv /opt/venv":                         true,
		"[linux/arm64 2/7] RUN python3 -m venv /opt/venv":                         true,
		"[internal] load metadata for docker.io/nvidia/cuda:12.2.2":               false,
		"[internal] load build definition from Dockerfile":                        false,
		"[internal] load .dockerignore":                                           false,
		"[auth] nvidia/cuda:pull token for registry-1.docker.io":                  false,
		"[context user] load from client":                                         false,
		"exporting to image":                                                      false,
		"importing cache manifest from r/x:buildcache":                            false,
	} {
		if got := isStep(name); got != want {
			t.Errorf("isStep(%q) = %v, want %v", name, got, want)
		}
	}
}
