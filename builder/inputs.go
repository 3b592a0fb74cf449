package builder

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/moby/buildkit/client"

	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/matrix"
)

// InputsLabel is the image label that holds the digest of what a build
// was made from (publish writes its variant's Inputs there; a build
// without one writes its own, buildInputs). A build whose every tag
// already holds an image with its inputs pushes nothing and runs no
// solve (run.unchanged).
const InputsLabel = "dev.gpuimg.inputs"

// inputsVersion is folded into every build's inputs: bump it when what
// the same inputs build changes meaning, so that every tag is built again
// once.
const inputsVersion = "gpuimg-build-inputs/1"

// buildInputs is what a build's inputs digest is taken over: everything
// that decides what the build pushes. encoding/json writes struct fields
// in this order and map keys sorted, so the encoding is canonical.
type buildInputs struct {
	Version    string             `json:"version"`
	Dockerfile string             `json:"dockerfile"`
	Labels     map[string]string  `json:"labels"`
	Epoch      int64              `json:"source_date_epoch"`
	Context    map[string]string  `json:"context"`        // generated context file → sha256
	Copy       map[string]string  `json:"copy,omitempty"` // --copy source → digest of its tree
	Platforms  []string           `json:"platforms,omitempty"`
	Comp       matrix.Compression `json:"compression"`
	LargeWheel int64              `json:"large_wheel"`
	Provenance string             `json:"provenance,omitempty"`
	PipConf    string             `json:"pip_conf,omitempty"`
}

// inputs is the digest ("sha256:…") of the build's inputs: the plan (its
// Dockerfile, labels and epoch), the generated build context files, the
// --copy sources' content, the platforms, compression, large-wheel
// threshold, provenance and pip settings. Index contents are not in it,
// as they are not in BuildKit's cache keys (Request.NoCache).
func (b *run) inputs(files map[string][]byte, ctxDir string) (string, error) {
	req := b.req
	df, err := b.uncheckedDockerfile()
	if err != nil {
		return "", err
	}
	in := buildInputs{Version: inputsVersion, Dockerfile: df, Labels: maps.Clone(b.plan.Labels), Epoch: b.plan.SourceDateEpoch,
		Context: map[string]string{}, Platforms: req.Platforms.Strings(), Comp: compressionOf(req.Compression, client.ExporterImage),
		LargeWheel: req.LargeWheel, Provenance: req.Provenance}
	delete(in.Labels, InputsLabel)
	if req.pipMirror() {
		in.PipConf = string(req.pipConf())
	}
	for name, data := range files {
		if name != "Dockerfile" { // in.Dockerfile, without the proof's stages
			in.Context[name] = digestOf(data)
		}
	}
	for _, cp := range req.Extras.Copy {
		spec, err := ParseCopySpec(cp)
		if err != nil {
			return "", err
		}
		d, err := treeDigest(filepath.Join(ctxDir, spec.Src))
		if err != nil {
			return "", fmt.Errorf("copy %s: %w", cp, err)
		}
		if in.Copy == nil {
			in.Copy = map[string]string{}
		}
		in.Copy[spec.Src] = d
	}
	data, err := json.Marshal(in)
	if err != nil {
		return "", fmt.Errorf("encode the build's inputs: %w", err)
	}
	return digestOf(data), nil
}

// uncheckedDockerfile is the plan's Dockerfile without the proof's
// stages: --no-checks gives the same image, so the same inputs.
func (b *run) uncheckedDockerfile() (string, error) {
	def := b.plan.definition
	if def.Base == "" || def.NoChecks {
		return b.plan.Dockerfile, nil
	}
	def.NoChecks = true
	return Dockerfile(def)
}

func digestOf(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// treeDigest is the digest of a --copy source: each file's path under
// root, mode, link target and content, in WalkDir's (lexical) order.
func treeDigest(root string) (string, error) {
	h := sha256.New()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%q %o %d\n", rel, info.Mode(), info.Size())
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(h, "-> %q\n", target)
		case info.Mode().IsRegular():
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			_, err = io.Copy(h, f)
			f.Close()
			return err
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// unchanged says whether the build can be skipped: it pushes tags only
// (no other output, no push by digest, no cache export, not --no-cache,
// one platform at most) and every tag already holds an image labelled
// with these inputs, all of one digest, which it returns.
func (b *run) unchanged(ctx context.Context, inputs string) (string, bool) {
	req := b.req
	if !req.Push || len(req.Tags) == 0 || len(req.Outputs) > 0 || req.PushByDigest != "" || len(req.CacheTo) > 0 || req.NoCache || len(req.Platforms) > 1 {
		return "", false
	}
	opts := slices.Clip(req.Registry)
	if len(req.Platforms) == 1 {
		opts = append(opts, images.WithPlatform(&req.Platforms[0]))
	}
	digest := ""
	for _, tag := range req.Tags {
		d, ok, err := images.Labelled(ctx, tag, InputsLabel, inputs, opts...)
		if err != nil || !ok || (digest != "" && d != digest) {
			return "", false // not there, unreadable or other inputs: build it
		}
		digest = d
	}
	return digest, true
}
