package publish

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/matrix"
)

const renderSrc = `repository: r.example.com/t
tag: "{torch}-cu{cuda_short}-py{python}"
matrix:
  cuda: ["12.6", "12.8"]
  torch: ["2.7"]
  python: ["3.12"]
platforms: [linux/amd64]
build:
  env: {GREETING: "${HOME} %{x}"}
  copy: ["app:/app"]
`

func TestGitHubMatrix(t *testing.T) {
	p := expand(t, renderSrc, ExpandOptions{})
	m, err := GitHubMatrix(p)
	if err != nil {
		t.Fatal(err)
	}
	inc := m["include"]
	if len(inc) != 2 {
		t.Fatalf("include %v", inc)
	}
	want := map[string]string{
		"name": "2.7.1-cu128-py3.12", "tag": "r.example.com/t:2.7.1-cu128-py3.12", "inputs": p.Variants[1].Inputs,
		"cuda": "12.8.2", "cuda_short": "128", "torch": "2.7.1", "python": "3.12", "os": p.Variants[1].Stack.OS, "flavor": "base",
	}
	for k, v := range want {
		if inc[1][k] != v {
			t.Errorf("include[1][%s] = %q, want %q", k, inc[1][k], v)
		}
	}
	if _, ok := inc[1]["tensorflow"]; ok {
		t.Errorf("a framework the stack lacks is in the entry: %v", inc[1])
	}

	big := &Plan{Variants: make([]Variant, GitHubMaxJobs)}
	if _, err := GitHubMatrix(big); err != nil {
		t.Errorf("%d variants: %v", GitHubMaxJobs, err)
	}
	big.Variants = append(big.Variants, Variant{})
	if _, err := GitHubMatrix(big); !errors.Is(err, ErrTooManyJobs) || !strings.Contains(err.Error(), "257 variants, GitHub runs at most 256 jobs") {
		t.Errorf("257 variants: %v", err)
	}
}

func TestBake(t *testing.T) {
	f, err := parse(t, renderSrc)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Expand(t.Context(), builtin(t), f, ExpandOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s0 := p.Variants[0].Stack
	base := images.Base{Name: "docker.io/" + s0.BaseImage, Digest: "sha256:" + strings.Repeat("c", 64), From: "docker.io/" + s0.BaseImage + "@sha256:" + strings.Repeat("c", 64), Created: time.Unix(1700000000, 0)}
	opts := ExpandOptions{Bases: map[string]images.Base{s0.BaseImage: base}}
	b, err := Bake(p, f, opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(b.Group["default"].Targets, " "); got != "2_7_1-cu126-py3_12 2_7_1-cu128-py3_12" {
		t.Errorf("default group %q", got)
	}
	for i, v := range p.Variants {
		tg := b.Target[BakeTargetName(v.Name)]
		if tg == nil {
			t.Fatalf("no target for %s", v.Name)
		}
		stack, _ := v.Stack.LabelValue()
		df, _ := Dockerfile(v.Stack, f.Build, opts)
		if tg.Context != "." || tg.Contexts["user"] != "." || strings.Join(tg.Tags, ",") != v.Tag || strings.Join(tg.Platforms, ",") != "linux/amd64" {
			t.Errorf("%s: target %+v", v.Name, tg)
		}
		if tg.Labels[matrix.StackLabel] != bakeEscape(stack) || tg.Labels[InputsLabel] != v.Inputs || tg.Labels["org.opencontainers.image.version"] != v.Stack.Tag() {
			t.Errorf("%s: labels %v", v.Name, tg.Labels)
		}
		if tg.DockerfileInline != bakeEscape(df) || !strings.Contains(tg.DockerfileInline, `$${HOME} %%{x}`) || strings.Contains(strings.ReplaceAll(tg.DockerfileInline, "$${", ""), "${") {
			t.Errorf("%s: dockerfile-inline not the generated Dockerfile, escaped for bake:\n%s", v.Name, tg.DockerfileInline)
		}
		cache := "type=registry,ref=r.example.com/t:buildcache-" + BakeTargetName(v.Name)
		if strings.Join(tg.CacheFrom, ",") != cache || strings.Join(tg.CacheTo, ",") != cache+",mode=max" {
			t.Errorf("%s: cache %v %v", v.Name, tg.CacheFrom, tg.CacheTo)
		}
		pinned := i == 0 // only the first variant's base is in opts
		if pinned != strings.Contains(df, "FROM "+base.From+" AS gpuimg-python\n") {
			t.Errorf("%s: pinned %v but Dockerfile:\n%s", v.Name, pinned, df)
		}
		if pinned && (tg.Labels["org.opencontainers.image.base.digest"] != base.Digest || tg.Args["SOURCE_DATE_EPOCH"] != "1700000000" || tg.Labels["org.opencontainers.image.created"] != "2023-11-14T22:13:20Z") {
			t.Errorf("%s: pinned base not in labels/args: %v %v", v.Name, tg.Labels, tg.Args)
		}
		if !pinned && (tg.Args != nil || tg.Labels["org.opencontainers.image.base.digest"] != "") {
			t.Errorf("%s: unpinned base with labels/args: %v %v", v.Name, tg.Labels, tg.Args)
		}
	}
	if got := BakeTargetName("2.7.1+cu128-py3.12"); got != "2_7_1_cu128-py3_12" {
		t.Errorf("BakeTargetName = %q", got)
	}
}
