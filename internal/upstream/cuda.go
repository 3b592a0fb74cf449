package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/gpuimg/gpuimg/matrix"
)

var redistribRE = regexp.MustCompile(`(?:^|/)redistrib_([0-9]+\.[0-9]+\.[0-9]+)\.json$`)

// redistComponent is one component of a redistrib manifest
// ("cuda_cudart": {"name": …, "version": …, "linux-x86_64": {…}}).
type redistComponent struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// updateCUDA lists the redistrib_X.Y.Z.json manifests in the redist
// directory and adds a row for each release the DB lacks (releases older
// than its oldest row are skipped).
func (o *options) updateCUDA(ctx context.Context, db *matrix.DB, ov *Overlay) error {
	dir := o.cudaURL + "/"
	o.progress(SourceCUDA, "reading "+dir)
	body, err := o.get(ctx, dir, "text/html")
	if err != nil {
		return err
	}
	versions, err := redistribVersions(dir, body)
	if err != nil {
		return err
	}
	known, floor := knownVersions(db.CUDA, func(r matrix.CUDARelease) matrix.Version { return r.Version })
	added := 0
	for _, v := range versions {
		if known[v.String()] || (!floor.IsZero() && v.Less(floor)) {
			continue
		}
		u := fmt.Sprintf("%s/redistrib_%s.json", o.cudaURL, v)
		o.progress(SourceCUDA, "reading "+u)
		row, src, driver, err := o.cudaRow(ctx, u, v, ov.Date)
		if err != nil {
			return err
		}
		ov.File.Sources = append(ov.File.Sources, src)
		ov.File.CUDA = append(ov.File.CUDA, row)
		reason := "the toolkit driver table of the release notes is not machine-readable"
		if driver != "" {
			reason += fmt.Sprintf("; the manifest's nvidia_driver component is %s, confirm it there", driver)
		}
		ov.Unfilled = append(ov.Unfilled, Unfilled{Source: SourceCUDA, Row: "CUDA " + v.String(), Field: "min_driver", Reason: reason})
		ov.Found = append(ov.Found, Finding{Source: SourceCUDA, What: "CUDA " + v.String(), URL: u})
		added++
	}
	o.progress(SourceCUDA, fmt.Sprintf("%d CUDA rows new", added))
	return nil
}

// redistribVersions reads a directory listing and returns the versions
// of the redistrib_X.Y.Z.json manifests it links, oldest first.
func redistribVersions(dir string, body []byte) ([]matrix.Version, error) {
	labels, err := listingLinks(dir, body, redistribRE)
	if err != nil {
		return nil, err
	}
	var out []matrix.Version
	for _, l := range labels {
		if v, err := matrix.ParseVersion(l); err == nil {
			out = append(out, v)
		}
	}
	if len(out) == 0 {
		return nil, &FormatError{URL: dir, Err: fmt.Errorf("links no redistrib_X.Y.Z.json manifest; is this NVIDIA's redist directory?")}
	}
	slices.SortFunc(out, matrix.Version.Compare)
	return out, nil
}

// cudaRow reads one manifest. driver is its nvidia_driver component's
// version ("" if none), a hint for the maintainer only.
func (o *options) cudaRow(ctx context.Context, u string, v matrix.Version, date string) (matrix.CUDARelease, matrix.Source, string, error) {
	var raw map[string]json.RawMessage
	if err := o.getJSON(ctx, u, &raw); err != nil {
		return matrix.CUDARelease{}, matrix.Source{}, "", err
	}
	str := func(k string) string {
		var s string
		_ = json.Unmarshal(raw[k], &s)
		return s
	}
	bad := func(format string, args ...any) error {
		return &FormatError{URL: u, Err: fmt.Errorf(format, args...)}
	}
	if label := str("release_label"); label != v.String() {
		return matrix.CUDARelease{}, matrix.Source{}, "", bad("release_label is %q, not %s", label, v)
	}
	if p := str("release_product"); p != "" && p != "cuda" {
		return matrix.CUDARelease{}, matrix.Source{}, "", bad("release_product is %q, not cuda", p)
	}
	comps := map[string]redistComponent{}
	for k, msg := range raw {
		if strings.HasPrefix(k, "release_") {
			continue
		}
		var c redistComponent
		if err := json.Unmarshal(msg, &c); err != nil {
			return matrix.CUDARelease{}, matrix.Source{}, "", bad("component %q: %w", k, err)
		}
		comps[k] = c
	}
	if comps["cuda_cudart"].Version == "" {
		return matrix.CUDARelease{}, matrix.Source{}, "", bad("no cuda_cudart component with a version; not a CUDA toolkit manifest")
	}
	id := "upstream-cuda-redistrib-" + v.String()
	row := matrix.CUDARelease{Version: v, Row: matrix.Row{Source: id}}
	if d := str("release_date"); len(d) >= 7 && d[4] == '-' {
		row.Released = d[:7]
	}
	var parts []string
	for _, k := range []string{"cuda_cudart", "cuda_nvcc", "cuda_nvrtc", "libcublas"} {
		if c, ok := comps[k]; ok && c.Version != "" {
			parts = append(parts, k+" "+c.Version)
		}
	}
	row.Notes = append(row.Notes, "component versions (redistrib manifest): "+strings.Join(parts, ", "))
	row.Notes = append(row.Notes, "min_driver not filled: the release notes' toolkit driver table is not machine-readable")
	src := matrix.Source{ID: id, URL: u, Retrieved: date,
		Title: fmt.Sprintf("CUDA %s redistrib manifest (release_label, release_date, component versions), read by gpuimg matrix update", v)}
	return row, src, comps["nvidia_driver"].Version, nil
}
