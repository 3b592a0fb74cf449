package upstream

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/net/html"

	"github.com/gpuimg/gpuimg/matrix"
)

var (
	// ncclDirRE is a version directory of NVIDIA's NCCL redist tree:
	// v2.30.7/ (one release) or, for older releases, v2.8/ (a minor).
	ncclDirRE = regexp.MustCompile(`(?:^|/)v([0-9]+\.[0-9]+(?:\.[0-9]+)?)/$`)
	// ncclBuildRE is one build archive: nccl_2.30.7-1+cuda13.3_x86_64.txz.
	ncclBuildRE = regexp.MustCompile(`(?:^|/)nccl_([0-9]+\.[0-9]+\.[0-9]+)-[0-9]+\+cuda([0-9]+\.[0-9]+)_x86_64\.txz$`)
)

// updateNCCL reads NVIDIA's NCCL redist directory (no redistrib JSON is
// published for NCCL): its vX.Y.Z/ (older: vX.Y/) directories, and in each
// the nccl_X.Y.Z-1+cudaA.B_x86_64.txz builds. A release the DB lacks
// becomes a row whose cuda lists the CUDA versions it is built for.
// Releases older than the DB's oldest row are skipped, and so are minor
// directories (v2.8/) of a minor the DB has a row of.
func (o *options) updateNCCL(ctx context.Context, db *matrix.DB, ov *Overlay) error {
	top := o.ncclURL + "/"
	o.progress(SourceNCCL, "reading "+top)
	body, err := o.get(ctx, top, "text/html")
	if err != nil {
		return err
	}
	dirs, err := listingLinks(top, body, ncclDirRE)
	if err != nil {
		return err
	}
	if len(dirs) == 0 {
		return &FormatError{URL: top, Err: fmt.Errorf("links no vX.Y.Z/ directory; is this NVIDIA's NCCL redist directory?")}
	}
	known, floor := knownVersions(db.NCCL, libraryVersion)
	minorKnown := map[string]bool{}
	for _, r := range db.NCCL {
		minorKnown[r.Version.Trunc(2).String()] = true
	}
	builds := map[string][]string{} // version -> CUDA versions
	where := map[string]string{}    // version -> listing URL
	for _, d := range dirs {
		v, err := matrix.ParseVersion(d)
		if err != nil {
			continue
		}
		switch {
		case v.Len() >= 3 && (known[v.String()] || (!floor.IsZero() && v.Less(floor))):
			continue
		case v.Len() == 2 && (minorKnown[v.String()] || (!floor.IsZero() && v.Less(floor.Trunc(2)))):
			continue
		}
		u := o.ncclURL + "/v" + d + "/"
		o.progress(SourceNCCL, "reading "+u)
		b, err := o.get(ctx, u, "text/html")
		if err != nil {
			return err
		}
		doc, err := html.Parse(bytes.NewReader(b))
		if err != nil {
			return &FormatError{URL: u, Err: fmt.Errorf("not HTML: %w", err)}
		}
		n := 0
		for _, href := range anchors(doc) {
			m := ncclBuildRE.FindStringSubmatch(href)
			if m == nil {
				continue
			}
			n++
			if !slices.Contains(builds[m[1]], m[2]) {
				builds[m[1]] = append(builds[m[1]], m[2])
				where[m[1]] = u
			}
		}
		if n == 0 {
			return &FormatError{URL: u, Err: fmt.Errorf("links no nccl_X.Y.Z-N+cudaA.B_x86_64.txz build")}
		}
	}
	var versions []matrix.Version
	for s := range builds {
		v, err := matrix.ParseVersion(s)
		if err != nil || known[v.String()] || (!floor.IsZero() && v.Less(floor)) {
			continue
		}
		versions = append(versions, v)
	}
	slices.SortFunc(versions, matrix.Version.Compare)
	for _, v := range versions {
		cudas := builds[v.String()]
		slices.SortFunc(cudas, func(a, b string) int { return matrix.MustVersion(a).Compare(matrix.MustVersion(b)) })
		c, err := matrix.ParseConstraint(strings.Join(cudas, " || "))
		if err != nil {
			return &FormatError{URL: where[v.String()], Err: fmt.Errorf("nccl %s builds for CUDA %v: %w", v, cudas, err)}
		}
		id := "upstream-nccl-redist-" + v.String()
		ov.File.Sources = append(ov.File.Sources, matrix.Source{ID: id, URL: where[v.String()], Retrieved: ov.Date,
			Title: fmt.Sprintf("NVIDIA NCCL redist directory listing with the nccl_%s builds (nccl_<ver>-1+cuda<X.Y>_x86_64.txz), read by gpuimg matrix update", v)})
		ov.File.NCCL = append(ov.File.NCCL, matrix.Library{Version: v, CUDA: c, Row: matrix.Row{Source: id,
			Notes: []string{fmt.Sprintf("CUDA list = the x86_64 builds in %s (%s); the release notes' supported-CUDA line was not read and may name more", where[v.String()], "+cuda"+strings.Join(cudas, ", +cuda"))}}})
		ov.Unfilled = append(ov.Unfilled, Unfilled{Source: SourceNCCL, Row: "NCCL " + v.String(), Field: "cuda (release notes)",
			Reason: "written as the CUDA versions NVIDIA publishes builds for; confirm against the release notes' Compatibility line"})
		ov.Found = append(ov.Found, Finding{Source: SourceNCCL, What: "NCCL " + v.String(), URL: where[v.String()]})
	}
	o.progress(SourceNCCL, fmt.Sprintf("%d NCCL rows new", len(versions)))
	return nil
}

// listingLinks returns the first submatch of re for each href of a
// directory listing, in page order, without repeats.
func listingLinks(u string, body []byte, re *regexp.Regexp) ([]string, error) {
	doc, err := html.Parse(bytes.NewReader(body))
	if err != nil {
		return nil, &FormatError{URL: u, Err: fmt.Errorf("not HTML: %w", err)}
	}
	var out []string
	for _, href := range anchors(doc) {
		if m := re.FindStringSubmatch(href); m != nil && !slices.Contains(out, m[1]) {
			out = append(out, m[1])
		}
	}
	return out, nil
}

// anchors returns the href of every <a> of doc, in order.
func anchors(doc *html.Node) []string {
	var out []string
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == "a" {
			for _, a := range n.Attr {
				if a.Key == "href" {
					out = append(out, a.Val)
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return out
}
