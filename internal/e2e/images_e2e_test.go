package e2e

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/gpuimg/gpuimg/internal/testenv"
)

func TestImagesCommands(t *testing.T) {
	testenv.Require(t, "starts real registries", testenv.Slow)
	ctx := t.Context()
	tools, err := testenv.BuildTools(ctx)
	must(t, err)
	must(t, testenv.EnsurePackages(ctx, "skopeo"))
	a, err := testenv.StartRegistry(ctx, tools.Registry, t.TempDir())
	must(t, err)
	defer a.Stop()
	b, err := testenv.StartRegistry(ctx, tools.Registry, t.TempDir())
	must(t, err)
	defer b.Stop()

	// An image with a stack label, as gpuimg build makes them.
	img := smallImage(t, "cuda>=12.2")
	cfg, _ := img.ConfigFile()
	cfg = cfg.DeepCopy()
	cfg.Config.Labels = map[string]string{"dev.gpuimg.stack": `{"cuda":"12.2.2","python":"3.10","os":"ubuntu22.04","frameworks":{"torch":{"version":"2.3.1","cuda":"12.1"}}}`}
	img, err = mutate.ConfigFile(img, cfg)
	must(t, err)
	src := a.Host + "/ml/torch:nightly"
	r, _ := name.ParseReference(src, name.Insecure)
	must(t, remote.Write(r, img))
	digest, _ := img.Digest()
	idx, err := random.Index(64<<10, 1, 2)
	must(t, err)
	ri, _ := name.ParseReference(a.Host+"/ml/multi:nightly", name.Insecure)
	must(t, remote.WriteIndex(ri, idx))
	idxDigest, _ := idx.Digest()

	t.Run("copy", func(t *testing.T) {
		out, errOut, code := run(t, "images", "copy", src, b.Host+"/ml/torch:stable", b.Host+"/mirror/torch:stable", "--dry-run")
		if code != 0 || strings.Count(out, "would copy") != 2 {
			t.Fatalf("dry run: exit %d %s %s", code, out, errOut)
		}
		out, errOut, code = run(t, "images", "copy", src, b.Host+"/ml/torch:stable", b.Host+"/mirror/torch:stable", "-o", "json")
		if code != 0 {
			t.Fatalf("copy: exit %d %s", code, errOut)
		}
		var res struct{ Digest string }
		must(t, json.Unmarshal([]byte(out), &res))
		if res.Digest != digest.String() {
			t.Errorf("digest %s, want %s", res.Digest, digest)
		}
		for _, bad := range [][]string{{"images", "copy", "127.0.0.1:1/x/y:z", b.Host + "/x/y:z"}, {"images", "copy", "Bad Ref", b.Host + "/x/y:z"}} {
			_, errOut, code := run(t, bad...)
			if code != 2 || strings.Count(errOut, "gpuimg:") != 1 {
				t.Errorf("%v: exit %d %q", bad, code, errOut)
			}
		}
	})

	t.Run("export", func(t *testing.T) {
		dir := t.TempDir()
		for _, tt := range []struct{ src, format, file, skopeo, want string }{
			{src, "oci-archive", "torch.oci.tar", "oci-archive:", digest.String()},
			{src, "oci", "torch-layout", "oci:", digest.String()},
			{a.Host + "/ml/multi:nightly", "oci-archive", "multi.oci.tar", "oci-archive:", idxDigest.String()},
			{src, "docker-archive", "torch.docker.tar", "docker-archive:", ""},
		} {
			p := filepath.Join(dir, tt.file)
			out, errOut, code := run(t, "images", "export", tt.src, p, "--format", tt.format)
			if code != 0 || !strings.Contains(out, "digests verified") {
				t.Fatalf("export %s: exit %d %s %s", tt.format, code, out, errOut)
			}
			raw, err := exec.Command("skopeo", "inspect", "--raw", tt.skopeo+p).Output()
			if err != nil {
				t.Fatalf("skopeo inspect %s%s: %v", tt.skopeo, p, err)
			}
			if tt.want != "" && digestOf(raw) != tt.want {
				t.Errorf("%s: skopeo reads %s, want %s", tt.format, digestOf(raw), tt.want)
			}
		}
		// The docker archive loads as the same image config.
		cfgDigest, _ := img.ConfigName()
		out, err := exec.Command("skopeo", "inspect", "--config", "--raw", "docker-archive:"+filepath.Join(dir, "torch.docker.tar")).Output()
		must(t, err)
		if digestOf(out) != cfgDigest.String() {
			t.Errorf("docker-archive config %s, want %s", digestOf(out), cfgDigest)
		}
		// Existing destinations are never overwritten.
		_, errOut, code := run(t, "images", "export", src, filepath.Join(dir, "torch.oci.tar"))
		if code != 2 || !strings.Contains(errOut, "exists") {
			t.Errorf("overwrite: exit %d %q", code, errOut)
		}
		if leftovers, _ := filepath.Glob(filepath.Join(dir, ".*gpuimg-tmp*")); len(leftovers) > 0 {
			t.Errorf("temporary files left: %v", leftovers)
		}
	})

	t.Run("promote needs a passing attached report", func(t *testing.T) {
		_, errOut, code := run(t, "images", "promote", src, "--to", "stable", "--require", "static")
		if code != 1 || !strings.Contains(errOut, "no gpuimg validation report attached") {
			t.Fatalf("without a report: exit %d %q", code, errOut)
		}
		_, errOut, code = run(t, "validate", src, "--attach")
		if code != 0 || !strings.Contains(errOut, "attached the static report (pass)") {
			t.Fatalf("validate --attach: exit %d %q", code, errOut)
		}
		_, errOut, code = run(t, "images", "promote", src, "--to", "stable")
		if code != 1 || !strings.Contains(errOut, "static report, a GPU report is required") {
			t.Fatalf("default --require gpu: exit %d %q", code, errOut)
		}
		out, errOut, code := run(t, "images", "promote", src, "--to", "stable", "--require", "static")
		if code != 0 || !strings.Contains(out, "promoted") {
			t.Fatalf("promote: exit %d %s %s", code, out, errOut)
		}
		raw, err := exec.Command("skopeo", "inspect", "--raw", "--tls-verify=false", "docker://"+a.Host+"/ml/torch:stable").Output()
		must(t, err)
		if digestOf(raw) != digest.String() {
			t.Errorf("stable points at %s, want %s", digestOf(raw), digest)
		}
		// A report that records its GPU and driver: promotion can require
		// the card (by any of its names) and a driver floor.
		if _, errOut, code := run(t, "validate", src, "--attach", "--gpu", "h100", "--driver", "550.54.14"); code != 0 {
			t.Fatalf("validate --attach --gpu --driver: exit %d %q", code, errOut)
		}
		for _, tt := range []struct {
			args []string
			code int
			want string
		}{
			{[]string{"--gpu", "NVIDIA H100 80GB HBM3", "--min-driver", "550"}, 0, "static report passed"},
			{[]string{"--gpu", "h100", "--min-driver", "555.42"}, 1, "report on driver 550.54.14, older than --min-driver 555.42"},
			{[]string{"--gpu", "NVIDIA H100 PCIe"}, 1, `report for GPU "h100", not NVIDIA H100 PCIe`},
			{[]string{"--min-driver", "five-fifty"}, 2, "--min-driver"},
		} {
			out, errOut, code := run(t, append([]string{"images", "promote", src, "--to", "h100-stable", "--require", "static"}, tt.args...)...)
			if code != tt.code || !strings.Contains(out+errOut, tt.want) {
				t.Errorf("promote %v: exit %d, want %d with %q\n%s%s", tt.args, code, tt.code, tt.want, out, errOut)
			}
		}
		// A failing image gets a failing report, and no promotion.
		weak := a.Host + "/ml/torch:weak"
		wr, _ := name.ParseReference(weak, name.Insecure)
		must(t, remote.Write(wr, smallImage(t, "cuda>=12.0")))
		if _, errOut, code := run(t, "validate", weak, "--attach"); code != 1 || !strings.Contains(errOut, "attached the static report (fail)") {
			t.Fatalf("validate --attach of a failing image: exit %d %q", code, errOut)
		}
		_, errOut, code = run(t, "images", "promote", weak, "--to", "weak-stable", "--require", "static")
		if code != 1 || !strings.Contains(errOut, "static report failed") {
			t.Errorf("promote of a failing image: exit %d %q", code, errOut)
		}
	})

	t.Run("convert", func(t *testing.T) {
		wantDiffs, _ := img.ConfigFile()
		for _, tt := range []struct{ comp, mediaType, annotation string }{
			{"zstd", "application/vnd.oci.image.layer.v1.tar+zstd", ""},
			{"estargz", "application/vnd.oci.image.layer.v1.tar+gzip", "containerd.io/snapshot/stargz/toc.digest"},
		} {
			dst := b.Host + "/ml/torch:" + tt.comp
			out, errOut, code := run(t, "images", "convert", src, dst, "--compression", tt.comp)
			if code != 0 || !strings.Contains(out, "converted") {
				t.Fatalf("convert %s: exit %d %s %s", tt.comp, code, out, errOut)
			}
			raw, err := exec.Command("skopeo", "inspect", "--raw", "--tls-verify=false", "docker://"+dst).Output()
			must(t, err)
			var m struct {
				Layers []struct {
					MediaType   string
					Annotations map[string]string
				}
			}
			must(t, json.Unmarshal(raw, &m))
			if len(m.Layers) != 1 || m.Layers[0].MediaType != tt.mediaType || (tt.annotation != "" && m.Layers[0].Annotations[tt.annotation] == "") {
				t.Errorf("%s manifest layers: %+v", tt.comp, m.Layers)
			}
			cfgRaw, err := exec.Command("skopeo", "inspect", "--config", "--raw", "--tls-verify=false", "docker://"+dst).Output()
			must(t, err)
			var cfg struct {
				RootFS struct {
					DiffIDs []string `json:"diff_ids"`
				} `json:"rootfs"`
			}
			must(t, json.Unmarshal(cfgRaw, &cfg))
			// zstd keeps the tar byte for byte; eStargz rewrites it with a table of contents.
			if len(cfg.RootFS.DiffIDs) != 1 || (tt.comp == "zstd") != (cfg.RootFS.DiffIDs[0] == wantDiffs.RootFS.DiffIDs[0].String()) {
				t.Errorf("%s changed the layer contents: %v", tt.comp, cfg.RootFS.DiffIDs)
			}
			out, errOut, code = run(t, "validate", dst, "-o", "json")
			if code != 0 || !strings.Contains(out, `"version": "2.3.1+cu121"`) {
				t.Errorf("validate %s: exit %d %s", tt.comp, code, errOut)
			}
		}
	})

	t.Run("ls and rm", func(t *testing.T) {
		out, errOut, code := run(t, "images", "ls", a.Host+"/ml/torch")
		if code != 0 || !strings.Contains(out, "nightly") || !strings.Contains(out, "cuda12.2.2-torch2.3.1-py3.10 ubuntu22.04") {
			t.Fatalf("ls: exit %d\n%s\n%s", code, out, errOut)
		}
		out, errOut, code = run(t, "images", "rm", b.Host+"/mirror/torch:stable")
		if code != 0 || !strings.Contains(out, "deleted") {
			t.Fatalf("rm: exit %d %s %s", code, out, errOut)
		}
		if err := exec.Command("skopeo", "inspect", "--tls-verify=false", "docker://"+b.Host+"/mirror/torch:stable").Run(); err == nil {
			t.Error("the deleted image is still there")
		}
		_, errOut, code = run(t, "images", "ls", "127.0.0.1:1/ml/torch")
		if code != 2 || strings.Count(errOut, "gpuimg:") != 1 {
			t.Errorf("ls of a down registry: exit %d %q", code, errOut)
		}
	})
}
