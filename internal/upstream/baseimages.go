package upstream

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/matrix"
)

// DefaultCUDAImageRepo is the repository of NVIDIA's CUDA base images.
const DefaultCUDAImageRepo = "docker.io/nvidia/cuda"

// cudaTagRE splits nvidia/cuda tags: 12.4.1-cudnn-runtime-ubuntu22.04.
var cudaTagRE = regexp.MustCompile(`^([0-9]+\.[0-9]+\.[0-9]+)-([a-z0-9-]+)-((?:ubuntu|rockylinux|ubi)[0-9.]+)$`)

// imageRepo is the repository to read (its mirror when one is set for
// its registry) and whether it is a mirror.
func (o *options) imageRepo() (string, error) {
	ref, err := name.NewRepository(o.imageRepoName)
	if err != nil {
		return "", fmt.Errorf("parse image repository %q: %w", o.imageRepoName, err)
	}
	m, ok := o.mirrors[ref.RegistryStr()]
	if !ok {
		return ref.Name(), nil
	}
	host, insecure := images.MirrorHost(m)
	if insecure {
		o.remote = append(slices.Clip(o.remote), images.WithInsecureRegistries(host))
	}
	return host + "/" + ref.RepositoryStr(), nil
}

// updateImages lists the CUDA image repository's tags and adds a
// base_images row for each CUDA release the DB has no row for (releases
// older than its oldest row are skipped). Each new release's base image
// config confirms CUDA_VERSION; a cudnn flavor's config gives
// NV_CUDNN_VERSION.
func (o *options) updateImages(ctx context.Context, db *matrix.DB, ov *Overlay) error {
	repo, err := o.imageRepo()
	if err != nil {
		return err
	}
	o.progress(SourceImages, "listing tags of "+repo)
	tags, err := images.Tags(ctx, repo, o.remote...)
	if err != nil {
		return err
	}
	known, floor := knownVersions(db.BaseImages, func(b matrix.BaseImage) matrix.Version { return b.CUDA })
	osRows := map[string]bool{}
	for _, s := range db.OS {
		osRows[s.Name] = true
	}
	// version -> os -> flavors
	byVersion := map[string]map[string][]string{}
	for _, t := range tags {
		m := cudaTagRE.FindStringSubmatch(t)
		if m == nil || known[m[1]] {
			continue
		}
		if byVersion[m[1]] == nil {
			byVersion[m[1]] = map[string][]string{}
		}
		byVersion[m[1]][m[3]] = append(byVersion[m[1]][m[3]], m[2])
	}
	var versions []matrix.Version
	for s := range byVersion {
		v, err := matrix.ParseVersion(s)
		if err == nil && (floor.IsZero() || !v.Less(floor)) {
			versions = append(versions, v)
		}
	}
	slices.SortFunc(versions, matrix.Version.Compare)
	srcID := "upstream-cuda-images-" + ov.Date
	added := 0
	for _, v := range versions {
		rows, err := o.imageRows(ctx, repo, v, byVersion[v.String()], osRows, srcID, ov)
		if err != nil {
			return err
		}
		what := "base images for CUDA " + v.String()
		ov.Found = append(ov.Found, Finding{Source: SourceImages, What: what, URL: repo})
		if len(rows) == 0 {
			var oses []string
			for os := range byVersion[v.String()] {
				oses = append(oses, os)
			}
			slices.Sort(oses)
			ov.Incomplete = append(ov.Incomplete, Incomplete{Source: SourceImages, Row: what,
				Reason: "none of its OSes (" + strings.Join(oses, ", ") + ") has an os: row; add one (the distro's Pythons are not in the registry)",
				File:   matrix.File{BaseImages: []matrix.BaseImage{{CUDA: v, OS: oses, Flavors: []string{"base"}, Row: matrix.Row{Source: srcID}}}}})
			continue
		}
		ov.File.BaseImages = append(ov.File.BaseImages, rows...)
		added++
	}
	if added > 0 || slices.ContainsFunc(ov.Incomplete, func(i Incomplete) bool { return i.Source == SourceImages }) {
		ov.File.Sources = append(ov.File.Sources, matrix.Source{ID: srcID, URL: repoURL(repo), Retrieved: ov.Date,
			Title: "tags of " + repo + ", with each new release's image config env (CUDA_VERSION, NV_CUDNN_VERSION), read by gpuimg matrix update"})
	}
	o.progress(SourceImages, fmt.Sprintf("%d CUDA releases with new base image rows", added))
	return nil
}

// repoURL is a web address for a repository: Docker Hub's page for
// Docker Hub, the registry API's tag list otherwise.
func repoURL(repo string) string {
	if r, ok := strings.CutPrefix(repo, name.DefaultRegistry+"/"); ok {
		return "https://hub.docker.com/r/" + r + "/tags"
	}
	host, path, _ := strings.Cut(repo, "/")
	return "https://" + host + "/v2/" + path + "/tags/list"
}

// imageRows builds one release's rows: OSes with the same flavors share
// a row. OSes without an os: row are left out and reported.
func (o *options) imageRows(ctx context.Context, repo string, v matrix.Version, flavorsByOS map[string][]string, osRows map[string]bool, srcID string, ov *Overlay) ([]matrix.BaseImage, error) {
	var oses, missing []string
	for os := range flavorsByOS {
		if osRows[os] {
			oses = append(oses, os)
		} else {
			missing = append(missing, os)
		}
	}
	slices.Sort(oses)
	slices.Sort(missing)
	name := "base images for CUDA " + v.String()
	if len(missing) > 0 {
		ov.Unfilled = append(ov.Unfilled, Unfilled{Source: SourceImages, Row: name, Field: "os",
			Reason: "left out " + strings.Join(missing, ", ") + ": no os: row (the distro's Pythons are not in the registry)"})
	}
	var rows []matrix.BaseImage
	for _, os := range oses {
		flavors := slices.Clone(flavorsByOS[os])
		slices.SortFunc(flavors, compareFlavor)
		flavors = slices.Compact(flavors)
		if i := slices.IndexFunc(rows, func(b matrix.BaseImage) bool { return slices.Equal(b.Flavors, flavors) }); i >= 0 {
			rows[i].OS = append(rows[i].OS, os)
			continue
		}
		rows = append(rows, matrix.BaseImage{CUDA: v, OS: []string{os}, Flavors: flavors, Row: matrix.Row{Source: srcID}})
	}
	for i := range rows {
		b := &rows[i]
		confirm := fmt.Sprintf("%s:%s-%s-%s", repo, v, b.Flavors[0], b.OS[0])
		o.progress(SourceImages, "reading the config of "+confirm)
		env, err := images.ConfigEnv(ctx, confirm, o.remote...)
		if err != nil {
			return nil, err
		}
		if got := envValue(env, "CUDA_VERSION"); got != v.String() {
			return nil, &FormatError{URL: confirm, Err: fmt.Errorf("config says CUDA_VERSION=%q, the tag says %s", got, v)}
		}
		b.Notes = append(b.Notes, "tags listed from "+repo+"; "+confirm+" config has CUDA_VERSION="+v.String())
		dnn := slices.IndexFunc(b.Flavors, func(f string) bool { return strings.HasPrefix(f, "cudnn") })
		if dnn < 0 {
			continue
		}
		ref := fmt.Sprintf("%s:%s-%s-%s", repo, v, b.Flavors[dnn], b.OS[0])
		o.progress(SourceImages, "reading the config of "+ref)
		env, err = images.ConfigEnv(ctx, ref, o.remote...)
		if err != nil {
			return nil, err
		}
		// NV_CUDNN_VERSION is the package version (9.1.0.70-1).
		raw := envValue(env, "NV_CUDNN_VERSION")
		ver, _, _ := strings.Cut(raw, "-")
		cv, err := matrix.ParseVersion(ver)
		if raw == "" || err != nil {
			ov.Unfilled = append(ov.Unfilled, Unfilled{Source: SourceImages, Row: name, Field: "cudnn", Reason: fmt.Sprintf("%s config has NV_CUDNN_VERSION=%q", ref, raw)})
			continue
		}
		b.CuDNN = cv
		b.Notes = append(b.Notes, "cudnn: "+ref+" config has NV_CUDNN_VERSION="+raw)
	}
	return rows, nil
}

// compareFlavor orders flavors as the data writes them: base, runtime,
// devel, then the cudnn flavors.
func compareFlavor(a, b string) int {
	rank := func(f string) int {
		switch f {
		case "base":
			return 0
		case "runtime":
			return 1
		case "devel":
			return 2
		}
		return 3
	}
	if ra, rb := rank(a), rank(b); ra != rb {
		return ra - rb
	}
	return strings.Compare(a, b)
}

func envValue(env []string, key string) string {
	for _, e := range env {
		if k, v, ok := strings.Cut(e, "="); ok && k == key {
			return v
		}
	}
	return ""
}
