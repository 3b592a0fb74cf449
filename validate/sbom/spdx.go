package sbom

import (
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	spdxjson "github.com/spdx/tools-golang/json"
	"github.com/spdx/tools-golang/spdx/v2/common"
	spdx "github.com/spdx/tools-golang/spdx/v2/v2_3"
)

// Namespace prefixes the SPDX documentNamespace (a URI unique to the
// document: a UUID derived from the image's digest follows).
const Namespace = "https://github.com/gpuimg/gpuimg/sbom/"

var reSPDXID = regexp.MustCompile(`[^A-Za-z0-9.-]+`)

func writeSPDX(w io.Writer, sub Subject, comps []Component, created time.Time) error {
	doc := &spdx.Document{
		SPDXVersion:       spdx.Version,
		DataLicense:       spdx.DataLicense,
		SPDXIdentifier:    "DOCUMENT",
		DocumentName:      sub.Name,
		DocumentNamespace: Namespace + uuidOf("spdx", sub.Name, sub.Digest, sub.Platform),
		CreationInfo: &spdx.CreationInfo{
			Creators: []common.Creator{{CreatorType: "Tool", Creator: "gpuimg"}},
			Created:  created.Format(time.RFC3339),
		},
	}
	used := map[string]int{}
	var imageID, baseID common.ElementID
	for _, c := range comps {
		id := reSPDXID.ReplaceAllString(string(c.Kind)+"-"+c.Name+"-"+c.Version, "-")
		if n := used[id]; n > 0 {
			used[id]++
			id = fmt.Sprintf("%s-%d", id, n+1)
		} else {
			used[id] = 1
		}
		eid := common.ElementID("Package-" + id)
		p := &spdx.Package{
			PackageName:             c.Name,
			PackageSPDXIdentifier:   eid,
			PackageVersion:          c.Version,
			PackageDownloadLocation: "NOASSERTION",
			PackageLicenseConcluded: "NOASSERTION",
			PackageLicenseDeclared:  "NOASSERTION",
			PackageCopyrightText:    "NOASSERTION",
			PackageSupplier:         supplier(c),
			PrimaryPackagePurpose:   purpose(c.Kind),
			PackageComment:          comment(c.Props),
		}
		if c.PURL.Type != "" {
			p.PackageExternalReferences = []*spdx.PackageExternalReference{{Category: common.CategoryPackageManager, RefType: common.TypePackageManagerPURL, Locator: c.PURL.String()}}
		}
		doc.Packages = append(doc.Packages, p)
		rel := func(a common.ElementID, typ string, b common.ElementID) {
			doc.Relationships = append(doc.Relationships, &spdx.Relationship{RefA: common.MakeDocElementID("", string(a)), RefB: common.MakeDocElementID("", string(b)), Relationship: typ})
		}
		switch c.Kind {
		case KindImage:
			imageID = eid
			rel("DOCUMENT", common.TypeRelationshipDescribe, eid)
		case KindBase:
			baseID = eid
			rel(imageID, common.TypeRelationshipDescendantOf, baseID)
		default:
			rel(imageID, common.TypeRelationshipContains, eid)
		}
	}
	return spdxjson.Write(doc, w, spdxjson.Indent("  "), spdxjson.EscapeHTML(false))
}

func purpose(k Kind) string {
	switch k {
	case KindImage, KindBase:
		return "CONTAINER"
	case KindOS:
		return "OPERATING-SYSTEM"
	}
	return "LIBRARY"
}

func supplier(c Component) *common.Supplier {
	if c.Kind == KindCUDA {
		return &common.Supplier{Supplier: "NVIDIA", SupplierType: "Organization"}
	}
	return &common.Supplier{Supplier: "NOASSERTION"}
}

// comment writes the properties SPDX 2.3 has no field for, one
// "name=value" per line.
func comment(ps []Property) string {
	var lines []string
	for _, p := range ps {
		lines = append(lines, p.Name+"="+p.Value)
	}
	return strings.Join(lines, "\n")
}
