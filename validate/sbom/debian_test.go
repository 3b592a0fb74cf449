package sbom

import (
	"archive/tar"
	"bytes"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	cdx "github.com/CycloneDX/cyclonedx-go"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	spdxjson "github.com/spdx/tools-golang/json"

	"github.com/gpuimg/gpuimg/internal/testenv"
	"github.com/gpuimg/gpuimg/matrix"
	"github.com/gpuimg/gpuimg/validate"
)

// TestSBOMOfDebianCUDA inventories an image holding Debian 12's real
// CUDA 11.8 libraries (libcudart, libcublas, libcublasLt and libcurand,
// as Debian's non-free packages install them) and a torch 2.3.1+cu118
// distribution: both SBOMs list libcudart and libcublasLt with their
// versions and the architectures in their fat binaries, and torch with
// the bare version in its purl and the +cu118 label as a property; and
// grype's SBOM reader lists the same libraries and torch.
func TestSBOMOfDebianCUDA(t *testing.T) {
	testenv.Require(t, "downloads Debian's CUDA 11.8 packages", testenv.Slow)
	libs, err := testenv.DebianCUDALibs(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	lt, err := testenv.DebianCUBLASLt(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	libs = append(libs, lt)
	p := filepath.Join(t.TempDir(), "layer.tar")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(f)
	write := func(name string, r io.Reader, size int64) {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: size, Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(tw, r); err != nil {
			t.Fatal(err)
		}
	}
	small := func(name, content string) { write(name, strings.NewReader(content), int64(len(content))) }
	small("etc/os-release", "ID=debian\nVERSION_ID=\"12\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n")
	for _, l := range libs {
		in, err := os.Open(l)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := in.Stat()
		write("usr/lib/x86_64-linux-gnu/"+filepath.Base(l), in, st.Size())
		in.Close()
	}
	sp := "usr/local/lib/python3.11/dist-packages/"
	small(sp+"torch-2.3.1+cu118.dist-info/METADATA", "Metadata-Version: 2.1\nName: torch\nVersion: 2.3.1+cu118\n")
	small(sp+"torch/version.py", "__version__ = '2.3.1+cu118'\ncuda: Optional[str] = '11.8'\n")
	must(t, tw.Close())
	must(t, f.Close())
	layer, err := tarball.LayerFromFile(p)
	must(t, err)
	img, err := mutate.AppendLayers(empty.Image, layer)
	must(t, err)
	db, err := matrix.Builtin()
	must(t, err)
	rep, err := validate.Inspect(t.Context(), img, validate.Options{DB: db, Inventory: true})
	must(t, err)
	d, _ := img.Digest()
	sub := Subject{Name: "registry.example.com/debian-cuda:11.8", Digest: d.String()}

	// What the inventory must hold, read the same way from both formats;
	// cublasLt's architectures are cuobjdump's (sm_35 … sm_90 with sm_61,
	// without sm_89, on 2026-12-02).
	root, err := testenv.DebianCUDA(t.Context())
	must(t, err)
	want := map[string]struct{ version, archs string }{
		"cudart":   {"11.8.89", ""}, // the runtime has no device code
		"cublasLt": {"11.11.3.6", cuobjdumpArchs(t, testenv.Cuobjdump(root), lt)},
	}
	check := func(format string, got map[string][2]string, torch [3]string) {
		for name, w := range want {
			g, ok := got[name]
			if !ok || g[0] != w.version || g[1] != w.archs {
				t.Errorf("%s: %s = %q, want version %s archs %q", format, name, g, w.version, w.archs)
			}
		}
		if torch != [3]string{"pkg:pypi/torch@2.3.1", "cu118", "11.8"} {
			t.Errorf("%s: torch purl, local label, CUDA = %q", format, torch)
		}
	}

	var buf bytes.Buffer
	must(t, Write(&buf, CycloneDXJSON, sub, rep.Inventory))
	var bom cdx.BOM
	must(t, cdx.NewBOMDecoder(bytes.NewReader(buf.Bytes()), cdx.BOMFileFormatJSON).Decode(&bom))
	got := map[string][2]string{}
	var torch [3]string
	for _, c := range *bom.Components {
		ps := map[string]string{}
		if c.Properties != nil {
			for _, p := range *c.Properties {
				ps[p.Name] = p.Value
			}
		}
		if c.Name == "torch" {
			torch = [3]string{c.PackageURL, ps[PropLocal], ps[PropTorchCUDA]}
		}
		if strings.HasPrefix(c.PackageURL, "pkg:generic/nvidia/") {
			got[c.Name] = [2]string{c.Version, ps[PropArchs]}
		}
	}
	check("CycloneDX", got, torch)
	cdxDoc := bytes.Clone(buf.Bytes())

	buf.Reset()
	must(t, Write(&buf, SPDXJSON, sub, rep.Inventory))
	doc, err := spdxjson.Read(bytes.NewReader(buf.Bytes()))
	must(t, err)
	got = map[string][2]string{}
	torch = [3]string{}
	for _, p := range doc.Packages {
		ps := map[string]string{}
		for line := range strings.SplitSeq(p.PackageComment, "\n") {
			k, v, _ := strings.Cut(line, "=")
			ps[k] = v
		}
		purl := ""
		for _, r := range p.PackageExternalReferences {
			purl = r.Locator
		}
		if p.PackageName == "torch" {
			torch = [3]string{purl, ps[PropLocal], ps[PropTorchCUDA]}
		}
		if strings.HasPrefix(purl, "pkg:generic/nvidia/") {
			got[p.PackageName] = [2]string{p.PackageVersion, ps[PropArchs]}
		}
	}
	check("SPDX", got, torch)

	// An independent scanner reads the same packages: grype's SBOM
	// provider lists the CUDA libraries found by file and torch by its
	// bare version (tools/sbomread; trivy drops pkg:generic, see
	// TestScannersReadSBOM).
	for format, doc := range map[string][]byte{"CycloneDX": cdxDoc, "SPDX": buf.Bytes()} {
		grype := versions(scan(t, doc).Grype)
		for name, v := range map[string]string{"cudart": "11.8.89", "cublasLt": "11.11.3.6", "torch": "2.3.1"} {
			if grype[name] != v {
				t.Errorf("%s: grype reads %s %q, want %s (all: %v)", format, name, grype[name], v, grype)
			}
		}
	}
}

// cuobjdumpArchs lists the SASS architectures cuobjdump --list-elf
// finds in lib, in gpuimg's order.
func cuobjdumpArchs(t *testing.T, cuobjdump, lib string) string {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), cuobjdump, "--list-elf", lib).Output()
	if err != nil {
		t.Fatalf("cuobjdump --list-elf %s: %v", lib, err)
	}
	seen := map[string]bool{}
	for _, m := range regexp.MustCompile(`\.(sm_[0-9]+a?)\.cubin`).FindAllStringSubmatch(string(out), -1) {
		seen[m[1]] = true
	}
	archs := slices.SortedFunc(maps.Keys(seen), matrix.CompareArchs)
	if len(archs) == 0 {
		t.Fatalf("cuobjdump lists no cubins in %s:\n%s", lib, out)
	}
	return strings.Join(archs, " ")
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
