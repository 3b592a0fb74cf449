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

// cudnnManifest is the part of a cuDNN redistrib_X.Y.Z.json the updater
// reads: the release_* strings and the "cudnn" component, whose
// cuda_variant lists the CUDA majors it is built for and whose platform
// objects are keyed by variant ("linux-x86_64": {"cuda12": {…}}).
type cudnnManifest struct {
	ReleaseDate    string `json:"release_date"`
	ReleaseLabel   string `json:"release_label"`
	ReleaseProduct string `json:"release_product"`
	CuDNN          *struct {
		Version     string                     `json:"version"`
		CUDAVariant []string                   `json:"cuda_variant"`
		LinuxX8664  map[string]json.RawMessage `json:"linux-x86_64"`
	} `json:"cudnn"`
}

var cudaVariantKeyRE = regexp.MustCompile(`^cuda([0-9]+)$`)

// updateCuDNN lists the redistrib_X.Y.Z.json manifests in cuDNN's redist
// directory and adds a row for each release the DB lacks (releases older
// than its oldest row are skipped): the CUDA majors it is built for, from
// the manifest. The CUDA minors and the driver floor are in the support
// matrix only, which is not machine-readable.
func (o *options) updateCuDNN(ctx context.Context, db *matrix.DB, ov *Overlay) error {
	dir := o.cudnnURL + "/"
	o.progress(SourceCuDNN, "reading "+dir)
	body, err := o.get(ctx, dir, "text/html")
	if err != nil {
		return err
	}
	versions, err := redistribVersions(dir, body)
	if err != nil {
		return err
	}
	known, floor := knownVersions(db.CuDNN, libraryVersion)
	added := 0
	for _, v := range versions {
		if known[v.String()] || (!floor.IsZero() && v.Less(floor)) {
			continue
		}
		u := fmt.Sprintf("%s/redistrib_%s.json", o.cudnnURL, v)
		o.progress(SourceCuDNN, "reading "+u)
		row, src, err := o.cudnnRow(ctx, u, v, ov.Date)
		if err != nil {
			return err
		}
		ov.File.Sources = append(ov.File.Sources, src)
		ov.File.CuDNN = append(ov.File.CuDNN, row)
		ov.Unfilled = append(ov.Unfilled, Unfilled{Source: SourceCuDNN, Row: "cuDNN " + v.String(), Field: "cuda minors, min_driver",
			Reason: "the manifest names only the CUDA majors; the support matrix page (not machine-readable) gives the minors and the driver floor"})
		ov.Found = append(ov.Found, Finding{Source: SourceCuDNN, What: "cuDNN " + v.String(), URL: u})
		added++
	}
	o.progress(SourceCuDNN, fmt.Sprintf("%d cuDNN rows new", added))
	return nil
}

// knownVersions returns the versions of rows (as version reads them)
// and the oldest of them: the updaters add rows for releases not known
// and not older than that floor.
func knownVersions[T any](rows []T, version func(T) matrix.Version) (map[string]bool, matrix.Version) {
	known := map[string]bool{}
	var floor matrix.Version
	for _, r := range rows {
		v := version(r)
		known[v.String()] = true
		if floor.IsZero() || v.Less(floor) {
			floor = v
		}
	}
	return known, floor
}

// libraryVersion is a cuDNN or NCCL row's version.
func libraryVersion(r matrix.Library) matrix.Version { return r.Version }

func (o *options) cudnnRow(ctx context.Context, u string, v matrix.Version, date string) (matrix.Library, matrix.Source, error) {
	var m cudnnManifest
	if err := o.getJSON(ctx, u, &m); err != nil {
		return matrix.Library{}, matrix.Source{}, err
	}
	bad := func(format string, args ...any) error {
		return &FormatError{URL: u, Err: fmt.Errorf(format, args...)}
	}
	if m.ReleaseLabel != v.String() {
		return matrix.Library{}, matrix.Source{}, bad("release_label is %q, not %s", m.ReleaseLabel, v)
	}
	if m.ReleaseProduct != "cudnn" {
		return matrix.Library{}, matrix.Source{}, bad("release_product is %q, not cudnn", m.ReleaseProduct)
	}
	if m.CuDNN == nil || m.CuDNN.Version == "" {
		return matrix.Library{}, matrix.Source{}, bad("no cudnn component with a version; not a cuDNN manifest")
	}
	// The Linux x86_64 archives say which majors exist for the platform
	// the matrix describes; cuda_variant (all platforms) is the fallback.
	var majors []string
	for k := range m.CuDNN.LinuxX8664 {
		if mm := cudaVariantKeyRE.FindStringSubmatch(k); mm != nil {
			majors = append(majors, mm[1])
		}
	}
	from := "linux-x86_64 archives"
	if len(majors) == 0 {
		majors, from = slices.Clone(m.CuDNN.CUDAVariant), "cuda_variant"
	}
	if len(majors) == 0 {
		return matrix.Library{}, matrix.Source{}, bad("the cudnn component names no CUDA variant (cuda_variant, linux-x86_64.cudaNN)")
	}
	slices.SortFunc(majors, func(a, b string) int { return matrix.MustVersion(a).Compare(matrix.MustVersion(b)) })
	majors = slices.Compact(majors)
	c, err := matrix.ParseConstraint(strings.Join(majors, " || "))
	if err != nil {
		return matrix.Library{}, matrix.Source{}, bad("cuda variants %v: %w", majors, err)
	}
	id := "upstream-cudnn-redistrib-" + v.String()
	row := matrix.Library{Version: v, CUDA: c, Row: matrix.Row{Source: id}}
	row.Notes = append(row.Notes,
		fmt.Sprintf("Only the CUDA majors are read: redistrib_%s.json (%s, released %s) has %s variants (%s). The support matrix's minors and driver floor are not filled.",
			v, m.CuDNN.Version, m.ReleaseDate, "cuda"+strings.Join(majors, " and cuda"), from))
	src := matrix.Source{ID: id, URL: u, Retrieved: date,
		Title: fmt.Sprintf("cuDNN %s redistrib manifest (release_label, the cudnn component's version and CUDA variants), read by gpuimg matrix update", v)}
	return row, src, nil
}
