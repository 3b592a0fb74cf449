package publish

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpuimg/gpuimg/images/sign"
	"github.com/gpuimg/gpuimg/internal/verbs"
	"github.com/gpuimg/gpuimg/matrix"
	"github.com/gpuimg/gpuimg/validate/sbom"
)

const minimal = `repository: registry.example.com/ml/torch
tag: "{torch}-cu{cuda_short}-py{python}"
matrix:
  cuda: ["12.6"]
  torch: ["2.7"]
  python: ["3.12"]
`

// parse writes src to a file named publish.yaml and loads it, so errors
// carry that name.
func parse(t *testing.T, src string) (*File, error) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "publish.yaml")
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return LoadFile(p)
}

func TestLoadFileErrors(t *testing.T) {
	tests := []struct {
		name, src string
		want      string // substring, after the file name
	}{
		{"unknown top-level key", minimal + "mirror: [x.example.com/a]\n", "publish.yaml: line 7: unknown key \"mirror\" in the file; known keys: build, builders, exclude, include, matrix, mirrors, platforms, promote, repository, signing, tag, targets, validate"},
		{"unknown key in build", minimal + "build:\n  pipp: [numpy]\n", "publish.yaml: line 8: unknown key \"pipp\" in build;"},
		{"signing without a key", minimal + "signing: {signature_format: both}\n", "publish.yaml: line 7: signing: has settings but no key"},
		{"bad signature format", minimal + "signing: {key: env://K, signature_format: v2}\n", "publish.yaml: line 7: signing.signature_format: signature format \"v2\""},
		{"bad sbom format", minimal + "signing: {key: k.pem, sbom: spdx-tag}\n", "publish.yaml: line 7: signing.sbom:"},
		{"bad require", minimal + "signing: {key: k.pem, require: [signature, attestation]}\n", "publish.yaml: line 7: signing.require: --require \"attestation\""},
		{"unknown key in validate", minimal + "validate: {drivr: 535.104.05}\n", "publish.yaml: line 7: unknown key \"drivr\" in validate;"},
		{"bad constraint", strings.Replace(minimal, `cuda: ["12.6"]`, `cuda: ["12.6", ">>12"]`, 1), "publish.yaml: line 4: cuda \">>12\":"},
		{"unknown axis", strings.Replace(minimal, "python:", "pyton:", 1), "publish.yaml: line 6: unknown axis \"pyton\"; known axes: cuda, cudnn, torch, tensorflow, jax, python, os, flavor, gpu, driver"},
		{"bad flavor", minimal + "include:\n  - {torch: \"2.7\", flavor: slim}\n", "publish.yaml: line 8: flavor \"slim\": flavor \"slim\" is not runtime, devel or base"},
		{"axis not a list", strings.Replace(minimal, `cuda: ["12.6"]`, `cuda: "12.6"`, 1), "publish.yaml: line 4: matrix.cuda must be a non-empty list"},
		{"duplicate value", strings.Replace(minimal, `cuda: ["12.6"]`, `cuda: ["12.6", "12.6"]`, 1), "publish.yaml: line 4: matrix.cuda lists \"12.6\" twice"},
		{"unknown template field", strings.Replace(minimal, "{torch}", "{pytorch}", 1), "publish.yaml: line 2: tag template \"{pytorch}-cu{cuda_short}-py{python}\": unknown field {pytorch}; known fields: cuda, cudnn, torch, tensorflow, jax, python, os, flavor, gpu, driver, cuda_short"},
		{"unclosed brace", strings.Replace(minimal, "{torch}", "{torch", 1), "publish.yaml: line 2: tag template \"{torch-cu{cuda_short}-py{python}\": '{' without '}'"},
		{"close without open", strings.Replace(minimal, "{torch}-cu", "{torch}}-cu", 1), "publish.yaml: line 2: tag template \"{torch}}-cu{cuda_short}-py{python}\": '}' without '{'"},
		{"bad tag literal", strings.Replace(minimal, "{torch}-cu", "{torch} cu", 1), "publish.yaml: line 2: tag template \"{torch} cu{cuda_short}-py{python}\": \"0 cu0-py0\" is not a valid image tag"},
		{"tag starting with a dot", strings.Replace(minimal, `"{torch}-cu`, `".{torch}-cu`, 1), "publish.yaml: line 2: tag template \".{torch}-cu{cuda_short}-py{python}\": \".0-cu0-py0\" is not a valid image tag: it must not start with '.'"},
		{"bad promote tag", minimal + "promote: {tags: [\"latest\", \"{torch}/x\"]}\n", "publish.yaml: line 7: tag template \"{torch}/x\": \"0/x\" is not a valid image tag"},
		{"missing repository", strings.Replace(minimal, "repository: registry.example.com/ml/torch\n", "", 1), "publish.yaml: line 1: repository is required"},
		{"bad repository", strings.Replace(minimal, "ml/torch", "ML/Torch", 1), "publish.yaml: line 1: repository \"registry.example.com/ML/Torch\":"},
		{"missing tag", strings.Replace(minimal, "tag: \"{torch}-cu{cuda_short}-py{python}\"\n", "", 1), "publish.yaml: line 1: tag is required"},
		{"exclude axis not in matrix", minimal + "exclude:\n  - {cuda: \"12.6\", os: ubuntu22.04}\n", "publish.yaml: line 8: exclude names axis \"os\", which matrix does not have"},
		{"bad pip extra", minimal + "build:\n  pip: [\"--index-url=http://evil\"]\n", "publish.yaml: line 8: build: pip requirement \"--index-url=http://evil\" is not NAME"},
		{"bad platform", minimal + "platforms:\n  - linux/amd64\n  - amd64\n", "publish.yaml: line 9: platform \"amd64\" is not os/arch[/variant]"},
		{"bad builder", minimal + "builders: [\"tcp://b:1234\", \"b:1234\"]\n", "publish.yaml: line 7: builder \"b:1234\": want an address starting with unix://"},
		{"bad mirror", minimal + "mirrors: [\"Mirror.example.com/ML\"]\n", "publish.yaml: line 7: mirror \"Mirror.example.com/ML\":"},
		{"bad driver", minimal + "validate: {driver: abc}\n", "publish.yaml: line 7:"},
		{"platforms not a list", minimal + "platforms: linux/amd64\n", "publish.yaml: line 7: platforms must be a list"},
		{"yaml syntax", minimal + "build: [\n", "publish.yaml: line 7: did not find expected node content"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parse(t, tt.src)
			if err == nil {
				t.Fatalf("no error; want %q", tt.want)
			}
			t.Log(err)
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error\n  %v\nlacks\n  %s", err, tt.want)
			}
		})
	}
}

func TestLoadFile(t *testing.T) {
	f, err := parse(t, minimal+`exclude:
  - {cuda: "12.6", torch: "2.6"}
include:
  - {cuda: "13.0", torch: latest, python: "3.12", os: ubuntu24.04}
build:
  pip: ["numpy==2.1.3"]
  env: {A: "1"}
platforms: [linux/amd64, linux/arm64]
builders: ["unix:///run/buildkit/buildkitd.sock", "kube-pod://buildkitd-0"]
validate: {driver: 535.104.05, gpu: [h100, l4]}
mirrors: [mirror.example.com/ml/torch]
promote: {tags: ["{torch}-cu{cuda_short}", latest]}
`)
	if err != nil {
		t.Fatal(err)
	}
	if f.Repository != "registry.example.com/ml/torch" || f.Tag.Line != 2 || strings.Join(f.Tag.Fields(), ",") != "torch,cuda_short,python" {
		t.Errorf("repository %q tag %+v", f.Repository, f.Tag)
	}
	var names []string
	for _, a := range f.Matrix {
		names = append(names, a.Name)
	}
	if strings.Join(names, ",") != "cuda,torch,python" || f.Matrix[1].Field != matrix.FieldTorch {
		t.Errorf("axes %+v", f.Matrix)
	}
	inc := f.Include[0]
	if inc.Line != 10 || inc.String() != "cuda 13.0, torch latest, python 3.12, os ubuntu24.04" {
		t.Errorf("include %+v (%s)", inc, inc)
	}
	if f.Validate.Driver.String() != "535.104.05" || len(f.Validate.GPU) != 2 || len(f.Promote.Tags) != 2 || f.Build.Env["A"] != "1" || len(f.Platforms) != 2 {
		t.Errorf("file %+v", f)
	}
}

// TestSigningSection: signing: with its defaults and every setting.
func TestSigningSection(t *testing.T) {
	f, err := ParseFile("publish.yaml", []byte(minimal+"signing:\n  key: env://COSIGN_KEY\n  signature_format: both\n  sbom: cyclonedx-json\n  require: [signature, validation]\n"))
	if err != nil {
		t.Fatal(err)
	}
	req, err := f.Signing.Required()
	if err != nil {
		t.Fatal(err)
	}
	if !f.Signing.Enabled() || f.Signing.Format() != sign.FormatBoth || f.Signing.SBOMFormat() != sbom.CycloneDXJSON || !slices.Equal(req, []verbs.Evidence{verbs.EvidenceSignature, verbs.EvidenceValidation}) {
		t.Errorf("signing %+v: format %s, sbom %s, require %v", f.Signing, f.Signing.Format(), f.Signing.SBOMFormat(), req)
	}
	var none Signing
	req, _ = none.Required()
	if none.Enabled() || none.Format() != sign.FormatBundle || none.SBOMFormat() != sbom.SPDXJSON || !slices.Equal(req, []verbs.Evidence{verbs.EvidenceSignature, verbs.EvidenceSBOM, verbs.EvidenceValidation}) {
		t.Errorf("defaults: format %s, sbom %s, require %v", none.Format(), none.SBOMFormat(), req)
	}
}
