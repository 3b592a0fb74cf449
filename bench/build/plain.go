package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// plainDockerfile is what a user writes instead of gpuimg build: FROM the
// same base, the frameworks in one pip install, the one package in a
// second (so a change of it reruns only that step), from the same index.
const plainDockerfile = `FROM nvidia/cuda:12.2.2-base-ubuntu22.04
RUN python3 -m venv /opt/venv && /opt/venv/bin/pip install --no-cache-dir --index-url %[1]s --trusted-host %[2]s torch==2.3.1+cu121 torchvision==0.18.1+cu121 torchaudio==2.3.1+cu121
ENV PATH=/opt/venv/bin:$PATH
RUN pip install --no-cache-dir --index-url %[1]s --trusted-host %[2]s gpuimg-extra==%[3]s
`

// plainBuild builds the plain Dockerfile with extra as the one package on
// the same buildkitd, with layers of compression comp (zstd or gzip),
// and pushes it to the same registry.
func (b *bench) plainBuild(ctx context.Context, extra, comp string) (time.Duration, string, error) {
	dir, err := os.MkdirTemp("", "gb-plain-")
	if err != nil {
		return 0, "", err
	}
	defer os.RemoveAll(dir)
	host := strings.TrimPrefix(strings.TrimPrefix(b.env.Index.URL, "http://"), "https://")
	host, _, _ = strings.Cut(host, "/")
	host, _, _ = strings.Cut(host, ":")
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), fmt.Appendf(nil, plainDockerfile, b.env.Index.URL, host, extra), 0o644); err != nil {
		return 0, "", err
	}
	out := fmt.Sprintf("type=image,name=%s,push=true,registry.insecure=true,compression=%s,force-compression=true", b.ref("plain", extra), comp)
	return b.timed(exec.CommandContext(ctx, b.env.Tools.Buildctl, "--addr", b.env.BuildKit.Address(), "build", "--frontend", "dockerfile.v0",
		"--local", "context="+dir, "--local", "dockerfile="+dir, "--output", out, "--progress", "plain"))
}

// imageSize is the compressed size of ref's config and layers (crane
// manifest).
func (b *bench) imageSize(ctx context.Context, ref string) (int64, error) {
	out, err := exec.CommandContext(ctx, b.env.Tools.Crane, "manifest", "--insecure", ref).Output()
	if err != nil {
		return 0, fmt.Errorf("crane manifest %s: %w", ref, err)
	}
	var m struct {
		Config struct{ Size int64 }   `json:"config"`
		Layers []struct{ Size int64 } `json:"layers"`
	}
	if err := json.Unmarshal(out, &m); err != nil {
		return 0, fmt.Errorf("manifest of %s: %w", ref, err)
	}
	n := m.Config.Size
	for _, l := range m.Layers {
		n += l.Size
	}
	return n, nil
}

// step is a vertex of BuildKit's progress (a Dockerfile step, an export)
// or one of its timed parts ("exporting to image › rewriting layers …"),
// with the time the plain progress gives it.
type step struct {
	name string
	d    time.Duration
}

// steps reads BuildKit's plain progress (the progress of every solve of
// a build, one after the other) and returns its timed vertices and their
// timed parts, longest first: "#8 exporting to image", "#8 exporting
// layers 0.1s done", "#8 DONE 2.8s". A vertex's id is named by its first
// line; ids start again in each solve.
func steps(progress string) []step {
	names := map[string]string{}
	var out []step
	for line := range strings.SplitSeq(progress, "\n") {
		id, rest, ok := strings.Cut(line, " ")
		if !ok || !strings.HasPrefix(id, "#") {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		switch {
		case f[0] == "DONE" || f[0] == "CACHED" || f[0] == "ERROR":
			if d, err := time.ParseDuration(f[len(f)-1]); err == nil && f[0] == "DONE" {
				out = append(out, step{names[id], d})
			}
			delete(names, id)
		case names[id] == "":
			names[id] = rest
		case len(f) >= 3 && f[len(f)-1] == "done":
			if d, err := time.ParseDuration(f[len(f)-2]); err == nil {
				out = append(out, step{names[id] + " › " + strings.Join(f[:len(f)-2], " "), d})
			}
		}
	}
	slices.SortStableFunc(out, func(a, b step) int { return cmp.Compare(b.d, a.d) })
	return out
}

// proofSteps is the time BuildKit's plain progress gives the proof's
// steps (the RUNs of proof.py) of one build, together: "#12 [gpuimg-check
// 1/1] RUN … gpuimg-proof.py …", then "#12 DONE 0.8s".
func proofSteps(progress string) time.Duration {
	var total time.Duration
	for _, s := range steps(progress) {
		if strings.Contains(s.name, "] RUN ") && strings.Contains(s.name, "gpuimg-proof.py") && !strings.Contains(s.name, " › ") {
			total += s.d
		}
	}
	return total
}
