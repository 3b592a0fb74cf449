// Command sbomread lists the packages that two independent scanners read
// from an SBOM file, as JSON on stdout: grype's SBOM provider
// (grype/pkg.Provide, what `grype sbom:FILE` runs before it matches
// vulnerabilities) and trivy's SBOM decoder (pkg/sbom.Decode, what
// `trivy sbom FILE` runs). Both scanners need a vulnerability database
// to go on to matching, which cannot be fetched on an offline machine;
// reading packages is the part gpuimg's SBOM has to get right, and this
// is the scanners' own code for it, not a re-implementation.
//
// Usage: sbomread FILE
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/anchore/grype/grype/pkg"
	trivysbom "github.com/aquasecurity/trivy/pkg/sbom"
)

// Package is one package as a scanner reads it.
type Package struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Type    string `json:"type"`
	PURL    string `json:"purl,omitempty"`
}

// Output is what sbomread prints.
type Output struct {
	Grype       []Package `json:"grype"`
	GrypeDistro string    `json:"grype_distro,omitempty"`
	Trivy       []Package `json:"trivy"`
	TrivyFormat string    `json:"trivy_format"`
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: sbomread FILE")
		os.Exit(2)
	}
	out, err := read(context.Background(), os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "sbomread:", err)
		os.Exit(1)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, "sbomread:", err)
		os.Exit(1)
	}
}

func read(ctx context.Context, path string) (*Output, error) {
	var out Output
	pkgs, pctx, _, err := pkg.Provide("sbom:"+path, pkg.ProviderConfig{})
	if err != nil {
		return nil, fmt.Errorf("grype: %w", err)
	}
	for _, p := range pkgs {
		out.Grype = append(out.Grype, Package{Name: p.Name, Version: p.Version, Type: string(p.Type), PURL: p.PURL})
	}
	if pctx.Distro != nil {
		out.GrypeDistro = pctx.Distro.String()
	}

	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	format, err := trivysbom.DetectFormat(f)
	if err != nil {
		return nil, fmt.Errorf("trivy: %w", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	s, err := trivysbom.Decode(ctx, f, format)
	if err != nil {
		return nil, fmt.Errorf("trivy: %w", err)
	}
	out.TrivyFormat = string(format)
	for _, r := range s.Packages {
		for _, p := range r.Packages {
			out.Trivy = append(out.Trivy, Package{Name: p.Name, Version: p.Version, Type: "os"})
		}
	}
	for _, a := range s.Applications {
		for _, p := range a.Packages {
			purl := ""
			if p.Identifier.PURL != nil {
				purl = p.Identifier.PURL.String()
			}
			out.Trivy = append(out.Trivy, Package{Name: p.Name, Version: p.Version, Type: string(a.Type), PURL: purl})
		}
	}
	return &out, nil
}
