package builder

import (
	"fmt"
	"net/url"
	"strings"
)

// ProvenanceAuto asks for SLSA provenance with the default builder id
// (DefaultBuilderID of the daemon the build runs on).
const ProvenanceAuto = "auto"

// provenanceAttr is the frontend attribute BuildKit's solver reads
// (control.go: attests["provenance"]; docs/attestations/slsa-provenance.md).
const provenanceAttr = "attest:provenance"

// DefaultBuilderID is the SLSA runDetails.builder.id of a build gpuimg
// runs on the BuildKit daemon at addr ("" or a local daemon gpuimg
// started: "local"): gpuimg's module URI with the daemon as a query, so
// that the id names both.
func DefaultBuilderID(addr string) string {
	if addr == "" {
		addr = "local"
	}
	return "https://github.com/gpuimg/gpuimg/cmd/gpuimg?buildkitd=" + url.QueryEscape(addr)
}

// CheckProvenance checks a provenance setting: "" (none), ProvenanceAuto
// (or "true"), or a builder id, a URI without commas or quotes (BuildKit
// reads the attribute as comma-separated values).
func CheckProvenance(p string) error {
	switch p {
	case "", ProvenanceAuto, "true":
		return nil
	case "false":
		return nil
	}
	if strings.ContainsAny(p, ",\"'= \t\n") {
		return fmt.Errorf("provenance builder id %q: give a URI without commas, quotes, spaces or '=' (or auto for gpuimg's default)", p)
	}
	if u, err := url.Parse(p); err != nil || u.Scheme == "" {
		return fmt.Errorf("provenance builder id %q: give a URI such as https://ci.example.com/runner (or auto for gpuimg's default)", p)
	}
	return nil
}

// provenanceOpt is the attest:provenance value for a Request.Provenance
// setting, the builder id resolved against addr; "" when none is asked.
// mode=max records the Dockerfile, the build arguments' values and the
// secrets' ids (never their values; gpuimg passes every credential as a
// BuildKit secret, never as a build argument); version=v1 is BuildKit
// v0.33's default (docs/attestations/slsa-provenance.md), written out so
// that another daemon's default cannot change it.
func provenanceOpt(p, addr string) string {
	switch p {
	case "", "false":
		return ""
	case ProvenanceAuto, "true":
		p = DefaultBuilderID(addr)
	}
	return "mode=max,version=v1,builder-id=" + p
}
