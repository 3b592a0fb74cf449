package builder

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/moby/buildkit/session/secrets/secretsprovider"
)

func TestParseOutput(t *testing.T) {
	for _, tt := range []struct {
		in      string
		want    Output
		wantErr string
	}{
		{"type=oci,dest=/x/img.tar", Output{Type: "oci", Dest: "/x/img.tar", Attrs: map[string]string{}}, ""},
		{"type=local,dest=/x/dir", Output{Type: "local", Dest: "/x/dir", Attrs: map[string]string{}}, ""},
		{"type=image,name=r/x:y,push=true", Output{Type: "image", Attrs: map[string]string{"name": "r/x:y", "push": "true"}}, ""},
		{"type=docker,dest=-", Output{Type: "docker", Dest: "-", Attrs: map[string]string{}}, ""},
		{"type=oci,tar=false,dest=/x/layout", Output{Type: "oci", Dest: "/x/layout", Attrs: map[string]string{"tar": "false"}}, ""},
		{`type=image,"name=r/a:1,r/b:2"`, Output{Type: "image", Attrs: map[string]string{"name": "r/a:1,r/b:2"}}, ""},
		{"TYPE=tar,DEST=/x/t.tar", Output{Type: "tar", Dest: "/x/t.tar", Attrs: map[string]string{}}, ""},
		{"dest=/x/img.tar", Output{}, "give its type="},
		{"type=oci,output=/x/img.tar", Output{}, "did you mean dest=/x/img.tar"},
		{"type=local", Output{}, "give dest=DIR"},
		{"type=oci,tar=false", Output{}, "give dest=DIR"},
		{"type=image,name=r/x,dest=/x/y", Output{}, "writes no file"},
		{"type=oci,dest", Output{}, "not key=value"},
	} {
		got, err := ParseOutput(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseOutput(%q) error %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseOutput(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

// TestOutputStaged: a file output is written under a temporary name
// beside its destination, created only when BuildKit writes it; a
// directory output and an image export are passed as they are.
func TestOutputStaged(t *testing.T) {
	dir := t.TempDir()
	dest := filepath.Join(dir, "img.tar")
	e, partial, err := Output{Type: "oci", Dest: dest, Attrs: map[string]string{"name": "x"}}.staged()
	if err != nil || partial != filepath.Join(dir, ".img.tar.gpuimg-partial") || e.Output == nil || e.Attrs["name"] != "x" {
		t.Fatalf("oci file output: %+v, %q, %v", e, partial, err)
	}
	if _, err := os.Stat(partial); !os.IsNotExist(err) {
		t.Errorf("the temporary file exists before BuildKit writes it: %v", err)
	}
	w, err := e.Output(nil)
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	if _, err := os.Stat(partial); err != nil {
		t.Errorf("BuildKit's writer did not create the temporary file: %v", err)
	}
	e, partial, err = Output{Type: "local", Dest: dir}.staged()
	if err != nil || partial != "" || e.OutputDir != dir || e.Output != nil {
		t.Errorf("local output: %+v, %q, %v", e, partial, err)
	}
	if _, _, err := (Output{Type: "tar", Dest: dir}).staged(); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("a tar output onto a directory: %v", err)
	}
	e, partial, err = Output{Type: "image", Attrs: map[string]string{"name": "r/x:y", "push": "true"}}.staged()
	if err != nil || partial != "" || e.Output != nil || e.OutputDir != "" || e.Attrs["push"] != "true" {
		t.Errorf("image export: %+v, %q, %v", e, partial, err)
	}
}

func TestParseSecret(t *testing.T) {
	for _, tt := range []struct {
		in      string
		want    secretsprovider.Source
		wantErr string
	}{
		{"id=netrc,src=/root/.netrc", secretsprovider.Source{ID: "netrc", FilePath: "/root/.netrc"}, ""},
		{"id=token,env=HF_TOKEN", secretsprovider.Source{ID: "token", Env: "HF_TOKEN"}, ""},
		{"id=HF_TOKEN", secretsprovider.Source{ID: "HF_TOKEN", Env: "HF_TOKEN"}, ""},
		{"src=/x", secretsprovider.Source{}, "want id=ID"},
		{"id=x,file=/x", secretsprovider.Source{}, `unknown key "file"`},
		{"id=" + SecretPipMirror + ",src=/x", secretsprovider.Source{}, "reserved"},
	} {
		got, err := ParseSecret(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseSecret(%q) error %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseSecret(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
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
