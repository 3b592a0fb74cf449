package cli

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/gpuimg/gpuimg/matrix"
)

// TestStackFlagsNameEveryField: every stack field, each constraint the
// resolver can name in a conflict among them, maps to a flag that
// StackOptions really registers, with the field's help, and that sets
// the field.
func TestStackFlagsNameEveryField(t *testing.T) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	var so StackOptions
	so.AddFlags(fs, true)
	for _, f := range matrix.SpecFields() {
		name := f.Key()
		fl := fs.Lookup(name)
		if fl == nil {
			t.Errorf("%s maps to --%s, which StackOptions does not register", f, name)
			continue
		}
		if fl.Usage != f.Usage() {
			t.Errorf("--%s: usage %q, want the field's %q", name, fl.Usage, f.Usage())
		}
		if err := fs.Set(name, f.Example()); err != nil || so.Spec[f] != f.Example() {
			t.Errorf("--%s %s: %v, field %q", name, f.Example(), err, so.Spec[f])
		}
	}
}

// TestConflictSpeaksFlags: the resolver names constraints by matrix.Field;
// the CLI renders them as the flags the user typed, in text and JSON.
func TestConflictSpeaksFlags(t *testing.T) {
	_, errOut, code := run(t, "matrix", "resolve", "--cuda", "11.7", "--torch", "2.3")
	if code != 1 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"\n  without --cuda 11.7: CUDA 11.8.0, torch 2.3.1 (CUDA 11.8)", "\n  without --torch 2.3: CUDA 11.7.1"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	out, errOut, code := run(t, "matrix", "resolve", "--cuda", "11.7", "--torch", "2.3", "-o", "json")
	var v struct {
		Error        string `json:"error"`
		Alternatives []struct {
			Dropped string       `json:"dropped"`
			Stack   matrix.Stack `json:"stack"`
		} `json:"alternatives"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil || code != 1 {
		t.Fatalf("exit %d, %v\n%s\n%s", code, err, out, errOut)
	}
	if len(v.Alternatives) != 2 || v.Alternatives[0].Dropped != "--cuda 11.7" || v.Alternatives[1].Dropped != "--torch 2.3" || v.Alternatives[0].Stack.CUDA != "11.8.0" {
		t.Errorf("alternatives %+v", v.Alternatives)
	}

	// No single drop works: the pairs that conflict on their own, as flags.
	args := []string{"matrix", "resolve", "--cuda", "12.1", "--tensorflow", "2.15", "--jax", "latest", "--python", "3.8"}
	_, errOut, _ = run(t, args...)
	for _, want := range []string{"; --cuda 12.1 and --tensorflow 2.15 conflict on their own", "; --jax * and --python 3.8 conflict on their own", "no stack works with any single constraint dropped"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	out, _, _ = run(t, append(args, "-o", "json")...)
	if err := json.Unmarshal([]byte(out), &v); err != nil || !strings.Contains(v.Error, "--cuda 12.1 and --tensorflow 2.15 conflict on their own") || v.Alternatives == nil || len(v.Alternatives) != 0 {
		t.Errorf("JSON %v: %s", err, out)
	}
}

// TestResolveAgainstUpstreamFacts runs `matrix resolve` on the built-in
// data for what pip and NVIDIA's images really do (sources in the data
// rows: tensorflow.yaml tensorflow-setup-py-2.15.0.post1,
// tensorflow-pr-62520, tensorflow-issue-61986; torch.yaml
// torch-pins-2.3-cu121, torch-pins-2.3.1-cu118; images.yaml images-nvidia-dockerfiles).
func TestResolveAgainstUpstreamFacts(t *testing.T) {
	tests := []struct {
		args    []string
		code    int
		has     []string // in stdout (code 0) or stderr (code 1)
		jsonEOL bool
	}{
		{args: []string{"--torch", "2.3", "--tensorflow", "2.15"}, code: 1,
			has: []string{"nvidia-cudnn-cu12 (8.9.2.26 and 8.9.4.25)", "nvidia-nccl-cu12 (2.20.5 and 2.16.5)", "pip installs one version of each package", "these work:", "without --tensorflow 2.15:"}},
		// torch 2.3.1+cu118 pins nvidia-nccl-cu11==2.20.5 (torch.yaml
		// torch-pins-2.3.1-cu118), tensorflow[and-cuda]==2.14.0 pins 2.16.5.
		{args: []string{"--torch", "2.3.1", "--tensorflow", "2.14"}, code: 1,
			has: []string{"torch 2.3.1 cu118 and tensorflow 2.14.0 pin different versions of nvidia-nccl-cu11 (2.20.5 and 2.16.5)"}},
		// An alternative whose pins the matrix lacks is offered as unconfirmed.
		{args: []string{"--torch", "2.3", "--tensorflow", "2.15", "--python", "3.10"}, code: 1,
			has: []string{"(unconfirmed: the matrix does not record the nvidia-* pins of"}},
		{args: []string{"--tensorflow", "2.15"}, has: []string{"pip install 'tensorflow[and-cuda]==2.15.0.post1'"}},
		// JAX 0.4.25's CUDA jaxlib is only on JAX's find-links page, and it
		// needs cuDNN 8 (jax.yaml jax-v0.4.25, cudnn_below).
		{args: []string{"--jax", "0.4.25"}, has: []string{"pip install 'jax[cuda12_pip]==0.4.25' 'nvidia-cudnn-cu12<9' --find-links https://storage.googleapis.com/jax-releases/jax_cuda_releases.html"}},
		{args: []string{"--tensorflow", "2.14", "--python", "3.11"}, code: 1,
			has: []string{"it pins tensorrt==8.5.3.1", "no cp311 wheels", "without --python 3.11: CUDA 11.8.0, tensorflow 2.14.0 (CUDA 11.8), Python 3.10"}},
		{args: []string{"--tensorflow", "2.12"}, jsonEOL: true,
			has: []string{"nvidia/cuda:11.8.0-cudnn8-runtime-ubuntu22.04", "8.9.6.50 (in the base image)", "warning: NVIDIA has marked"}},
		{args: []string{"--tensorflow", "2.13"}, jsonEOL: true, has: []string{"8.9.6.50 (in the base image)"}},
		{args: []string{"--tensorflow", "2.12", "--cuda", "11.8", "--cudnn", "8.6"}, jsonEOL: true,
			has: []string{"nvidia/cuda:11.8.0-cudnn8-runtime-ubuntu18.04", "8.6.0.163 (in the base image)"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			out, errOut, code := run(t, append([]string{"matrix", "resolve"}, tt.args...)...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d:\n%s%s", code, tt.code, out, errOut)
			}
			got := out
			if code != 0 {
				got = errOut
			}
			for _, want := range tt.has {
				if !strings.Contains(got, want) {
					t.Errorf("output lacks %q:\n%s", want, got)
				}
			}
			if strings.Contains(got, "conflict on their own") && slices.Contains(tt.args, "--cudnn") {
				t.Errorf("names a conflict: %s", got)
			}
			if code != 0 {
				return
			}
			js, _, _ := run(t, append([]string{"matrix", "resolve", "-o", "json"}, tt.args...)...)
			var st matrix.Stack
			if err := json.Unmarshal([]byte(js), &st); err != nil || st.BaseImageEOL != tt.jsonEOL {
				t.Errorf("JSON base_image_eol %v, want %v (%v)", st.BaseImageEOL, tt.jsonEOL, err)
			}
		})
	}
}

// TestListImagesSupport: `matrix list images` shows which tags NVIDIA has
// marked end of life (images.yaml: 12.8.1 is in doc/unsupported-tags.md,
// 12.8.2 is the supported 12.8 point release).
func TestListImagesSupport(t *testing.T) {
	out, errOut, code := run(t, "matrix", "list", "images")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for prefix, want := range map[string]string{"12.8.1 ": "end-of-life", "12.8.2 ": "supported"} {
		found := false
		for line := range strings.SplitSeq(out, "\n") {
			if strings.HasPrefix(line, prefix) {
				found = true
				if !strings.Contains(line, want) {
					t.Errorf("%q lacks %q", line, want)
				}
			}
		}
		if !found {
			t.Errorf("no row for %s:\n%s", prefix, out)
		}
	}
}
