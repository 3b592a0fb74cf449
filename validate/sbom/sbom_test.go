package sbom

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
	spdxjson "github.com/spdx/tools-golang/json"

	"github.com/gpuimg/gpuimg/validate"
)

var update = flag.Bool("update", false, "rewrite testdata/*.json from the current output")

func TestPURL(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    PURL
		want string
	}{
		{"deb", DebPURL("debian", "12", "libc6", "2.36-9+deb12u7", "amd64"), "pkg:deb/debian/libc6@2.36-9%2Bdeb12u7?arch=amd64&distro=debian-12"},
		{"deb epoch", DebPURL("ubuntu", "22.04", "perl-base", "1:5.34.0-3ubuntu1", "amd64"), "pkg:deb/ubuntu/perl-base@1%3A5.34.0-3ubuntu1?arch=amd64&distro=ubuntu-22.04"},
		{"deb no os", DebPURL("", "", "x", "1", ""), "pkg:deb/x@1"},
		{"pypi local label dropped", PyPIPURL("torch", "2.3.1+cu121"), "pkg:pypi/torch@2.3.1"},
		{"pypi normalized", PyPIPURL("Nvidia_CUDNN.cu12", "8.9.2.26"), "pkg:pypi/nvidia-cudnn-cu12@8.9.2.26"},
		{"cuda", CUDAPURL("cublasLt", "11.11.3.6"), "pkg:generic/nvidia/cublasLt@11.11.3.6"},
		{"cuda no version", CUDAPURL("cudnn", ""), "pkg:generic/nvidia/cudnn"},
		{"oci", OCIPURL("registry.example.com/ml/torch:2.3", "sha256:abc"), "pkg:oci/torch@sha256%3Aabc?repository_url=registry.example.com/ml/torch"},
		{"oci port", OCIPURL("localhost:5000/torch", "sha256:abc"), "pkg:oci/torch@sha256%3Aabc?repository_url=localhost%3A5000/torch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.p.String(); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func fixture() (Subject, *validate.Inventory) {
	sub := Subject{Name: "registry.example.com/ml/torch:2.3", Digest: "sha256:" + strings.Repeat("ab", 32), Platform: "linux/amd64"}
	inv := &validate.Inventory{
		Created:     time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC),
		OS:          validate.OSInfo{ID: "debian", VersionID: "12", Pretty: "Debian GNU/Linux 12 (bookworm)"},
		CUDAVersion: "11.8.89", RequireCUDA: "cuda>=11.8", DriverFloor: "520.61.05", DriverFloorCompat: "450.80.02",
		Base: validate.BaseImage{Name: "docker.io/library/debian:12", Digest: "sha256:" + strings.Repeat("cd", 32)},
		OSPackages: []validate.OSPackage{
			{Name: "libc6", Version: "2.36-9+deb12u7", Arch: "amd64", Source: "glibc"},
			{Name: "libcudart11.0", Version: "11.8.89~11.8.0-5~deb12u1", Arch: "amd64", Source: "nvidia-cuda-toolkit"},
		},
		Python: []validate.PythonDist{
			{Name: "nvidia-cudnn-cu12", Version: "8.9.2.26", Path: "opt/venv/lib/python3.11/site-packages/nvidia_cudnn_cu12-8.9.2.26.dist-info"},
			{Name: "torch", Version: "2.3.1", Local: "cu121", CUDA: "12.1", Path: "opt/venv/lib/python3.11/site-packages/torch-2.3.1+cu121.dist-info",
				Kernels: validate.Kernels{SASS: []string{"sm_50", "sm_80", "sm_90"}, PTX: []string{"sm_90"}}},
		},
		CUDA: []validate.CUDAComponent{
			{Name: "cublasLt", Version: "11.11.3.6", Family: "cublaslt", Path: "usr/lib/x86_64-linux-gnu/libcublasLt.so.11.11.3.6", Soname: "libcublasLt.so.11",
				Kernels: validate.Kernels{SASS: []string{"sm_35", "sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_89", "sm_90"}}},
			{Name: "cudart", Version: "11.8.89", Family: "cudart", Path: "usr/lib/x86_64-linux-gnu/libcudart.so.11.8.89", Soname: "libcudart.so.11.0"},
		},
	}
	return sub, inv
}

func TestWriteSPDX(t *testing.T) {
	sub, inv := fixture()
	b := write(t, SPDXJSON, sub, inv)
	doc, err := spdxjson.Read(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("tools-golang cannot read its own output back: %v", err)
	}
	if doc.SPDXVersion != "SPDX-2.3" || doc.CreationInfo.Created != "2026-11-30T12:00:00Z" {
		t.Errorf("version %s created %s", doc.SPDXVersion, doc.CreationInfo.Created)
	}
	purls := map[string]string{} // name → purl
	comments := map[string]string{}
	for _, p := range doc.Packages {
		for _, r := range p.PackageExternalReferences {
			if r.RefType == "purl" {
				purls[p.PackageName] = r.Locator
			}
		}
		comments[p.PackageName] = p.PackageComment
	}
	for name, want := range map[string]string{
		"torch":         "pkg:pypi/torch@2.3.1",
		"libc6":         "pkg:deb/debian/libc6@2.36-9%2Bdeb12u7?arch=amd64&distro=debian-12",
		"cublasLt":      "pkg:generic/nvidia/cublasLt@11.11.3.6",
		"cudart":        "pkg:generic/nvidia/cudart@11.8.89",
		"libcudart11.0": "pkg:deb/debian/libcudart11.0@11.8.89~11.8.0-5~deb12u1?arch=amd64&distro=debian-12",
	} {
		if purls[name] != want {
			t.Errorf("%s: purl %q, want %q", name, purls[name], want)
		}
	}
	for name, want := range map[string]string{
		"torch":    "gpuimg:python:local=cu121\ngpuimg:version=2.3.1+cu121\ngpuimg:python:cuda=12.1",
		"cublasLt": PropArchs + "=sm_35 sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_89 sm_90",
		sub.Name:   PropRequireCUDA + "=cuda>=11.8",
	} {
		if !strings.Contains(comments[name], want) {
			t.Errorf("%s: comment %q lacks %q", name, comments[name], want)
		}
	}
	var rels []string
	for _, r := range doc.Relationships {
		if r.Relationship != "CONTAINS" {
			rels = append(rels, string(r.RefA.ElementRefID)+" "+r.Relationship+" "+string(r.RefB.ElementRefID))
		}
	}
	if got := strings.Join(rels, "; "); !strings.Contains(got, "DOCUMENT DESCRIBES Package-image-") || !strings.Contains(got, "DESCENDANT_OF Package-base-image-docker.io-library-debian-12-sha256-cdcd") {
		t.Errorf("relationships: %s", got)
	}
	golden(t, "spdx.json", b)
}

func TestWriteCycloneDX(t *testing.T) {
	sub, inv := fixture()
	b := write(t, CycloneDXJSON, sub, inv)
	var bom cdx.BOM
	if err := cdx.NewBOMDecoder(bytes.NewReader(b), cdx.BOMFileFormatJSON).Decode(&bom); err != nil {
		t.Fatalf("cyclonedx-go cannot read its own output back: %v", err)
	}
	if bom.SpecVersion != cdx.SpecVersion1_6 || bom.Metadata.Timestamp != "2026-11-30T12:00:00Z" || !strings.HasPrefix(bom.SerialNumber, "urn:uuid:") {
		t.Errorf("spec %s timestamp %s serial %s", bom.SpecVersion, bom.Metadata.Timestamp, bom.SerialNumber)
	}
	if bom.Metadata.Component == nil || bom.Metadata.Component.Type != cdx.ComponentTypeContainer || bom.Metadata.Component.PackageURL != "pkg:oci/torch@sha256%3A"+strings.Repeat("ab", 32)+"?repository_url=registry.example.com/ml/torch" {
		t.Errorf("metadata component %+v", bom.Metadata.Component)
	}
	byName := map[string]cdx.Component{}
	for _, c := range *bom.Components {
		byName[c.Name] = c
	}
	propsOf := func(c cdx.Component) map[string]string {
		m := map[string]string{}
		if c.Properties != nil {
			for _, p := range *c.Properties {
				m[p.Name] = p.Value
			}
		}
		return m
	}
	torch := byName["torch"]
	if torch.PackageURL != "pkg:pypi/torch@2.3.1" || torch.Version != "2.3.1" || propsOf(torch)[PropLocal] != "cu121" || propsOf(torch)[PropFullVersion] != "2.3.1+cu121" {
		t.Errorf("torch %+v %v", torch, propsOf(torch))
	}
	lt := byName["cublasLt"]
	if p := propsOf(lt); p[PropArchs] != "sm_35 sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_89 sm_90" || p[PropSoname] != "libcublasLt.so.11" || lt.Supplier == nil || lt.Supplier.Name != "NVIDIA" {
		t.Errorf("cublasLt %+v %v", lt, p)
	}
	if os := byName["debian"]; os.Type != cdx.ComponentTypeOS || os.Version != "12" {
		t.Errorf("os %+v", os)
	}
	if len(*bom.Dependencies) != 1 || len(*(*bom.Dependencies)[0].Dependencies) != len(*bom.Components) {
		t.Errorf("dependencies %+v", bom.Dependencies)
	}
	golden(t, "cyclonedx.json", b)
}

// TestWriteNoClock: an image without a creation time gets the epoch in
// SPDX (which requires a time) and no timestamp in CycloneDX, never now.
func TestWriteNoClock(t *testing.T) {
	sub, inv := fixture()
	inv.Created = time.Time{}
	if b := write(t, SPDXJSON, sub, inv); !bytes.Contains(b, []byte(`"created": "1970-01-01T00:00:00Z"`)) {
		t.Errorf("SPDX without image time:\n%s", b[:400])
	}
	if b := write(t, CycloneDXJSON, sub, inv); bytes.Contains(b, []byte(`"timestamp"`)) {
		t.Errorf("CycloneDX has a timestamp the image does not")
	}
}

func TestFormat(t *testing.T) {
	for _, tc := range []struct{ in, media, pred string }{
		{"spdx-json", "application/spdx+json", "https://spdx.dev/Document"},
		{"cyclonedx-json", "application/vnd.cyclonedx+json", "https://cyclonedx.org/bom"},
	} {
		f, err := ParseFormat(tc.in)
		if err != nil || f.MediaType() != tc.media || f.PredicateType() != tc.pred {
			t.Errorf("%s: %v %s %s", tc.in, err, f.MediaType(), f.PredicateType())
		}
	}
	if _, err := ParseFormat("spdx"); err == nil || !strings.Contains(err.Error(), "spdx-json or cyclonedx-json") {
		t.Errorf("ParseFormat(spdx) = %v", err)
	}
	if err := Write(&bytes.Buffer{}, SPDXJSON, Subject{}, nil); err == nil {
		t.Error("Write without an inventory succeeded")
	}
}

// write writes the SBOM twice and fails unless both are the same bytes.
func write(t *testing.T, f Format, sub Subject, inv *validate.Inventory) []byte {
	t.Helper()
	var a, b bytes.Buffer
	if err := Write(&a, f, sub, inv); err != nil {
		t.Fatal(err)
	}
	if err := Write(&b, f, sub, inv); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatalf("%s output differs between two writes of one inventory", f)
	}
	return a.Bytes()
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test ./validate/sbom -run %s -update)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from %s (if the change is intended: go test ./validate/sbom -run %s -update)\n%s", t.Name(), p, t.Name(), got)
	}
}

// TestBOMRefsUnique: multiarch packages and two copies of one library
// get distinct bom-refs and SPDX ids.
func TestBOMRefsUnique(t *testing.T) {
	sub, inv := fixture()
	inv.OSPackages = append(inv.OSPackages, validate.OSPackage{Name: "libc6", Version: "2.36-9+deb12u7", Arch: "i386"})
	c := inv.CUDA[0]
	c.Path = "opt/other/" + c.Path
	inv.CUDA = append(inv.CUDA, c)
	var bom cdx.BOM
	if err := cdx.NewBOMDecoder(bytes.NewReader(write(t, CycloneDXJSON, sub, inv)), cdx.BOMFileFormatJSON).Decode(&bom); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, c := range *bom.Components {
		if seen[c.BOMRef] {
			t.Errorf("bom-ref %s twice", c.BOMRef)
		}
		seen[c.BOMRef] = true
	}
	doc, err := spdxjson.Read(bytes.NewReader(write(t, SPDXJSON, sub, inv)))
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, p := range doc.Packages {
		if ids[string(p.PackageSPDXIdentifier)] {
			t.Errorf("SPDX id %s twice", p.PackageSPDXIdentifier)
		}
		ids[string(p.PackageSPDXIdentifier)] = true
	}
	if len(seen) != len(*bom.Components) || len(ids) != len(doc.Packages) {
		t.Errorf("%d refs for %d components, %d ids for %d packages", len(seen), len(*bom.Components), len(ids), len(doc.Packages))
	}
}
