package sbom

import (
	"io"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
)

func writeCycloneDX(w io.Writer, sub Subject, comps []Component, created time.Time) error {
	bom := cdx.NewBOM()
	bom.SerialNumber = "urn:uuid:" + uuidOf("cyclonedx", sub.Name, sub.Digest, sub.Platform)
	bom.Metadata = &cdx.Metadata{
		Tools: &cdx.ToolsChoice{Components: &[]cdx.Component{{Type: cdx.ComponentTypeApplication, Name: "gpuimg"}}},
	}
	if !created.IsZero() {
		bom.Metadata.Timestamp = created.UTC().Format(time.RFC3339)
	}
	var list []cdx.Component
	var deps []string
	for _, c := range comps {
		cc := cdx.Component{
			BOMRef:     bomRef(c),
			Type:       componentType(c.Kind),
			Name:       c.Name,
			Version:    c.Version,
			PackageURL: c.PURL.String(),
			Properties: cdxProps(c.Props),
		}
		if c.PURL.Type == "" {
			cc.PackageURL = ""
		}
		if c.Kind == KindCUDA {
			cc.Supplier = &cdx.OrganizationalEntity{Name: "NVIDIA"}
		}
		if c.Kind == KindImage {
			bom.Metadata.Component = &cc
			continue
		}
		list = append(list, cc)
		deps = append(deps, cc.BOMRef)
	}
	bom.Components = &list
	if bom.Metadata.Component != nil {
		bom.Dependencies = &[]cdx.Dependency{{Ref: bom.Metadata.Component.BOMRef, Dependencies: &deps}}
	}
	enc := cdx.NewBOMEncoder(w, cdx.BOMFileFormatJSON)
	enc.SetPretty(true)
	enc.SetEscapeHTML(false)
	return enc.EncodeVersion(bom, cdx.SpecVersion1_6)
}

// bomRef is the component's purl (kind/name@version when it has none),
// and the path where it was found, which keeps two copies apart; a deb's
// purl carries its architecture (multiarch libc6:amd64 and libc6:i386).
func bomRef(c Component) string {
	if c.Kind == KindImage {
		return "image"
	}
	ref := c.PURL.String()
	if c.PURL.Type == "" {
		ref = string(c.Kind) + "/" + c.Name + "@" + c.Version
	}
	if p := prop(c.Props, PropPath); p != "" {
		ref += "#" + p
	}
	return ref
}

func componentType(k Kind) cdx.ComponentType {
	switch k {
	case KindImage, KindBase:
		return cdx.ComponentTypeContainer
	case KindOS:
		return cdx.ComponentTypeOS
	}
	return cdx.ComponentTypeLibrary
}

func cdxProps(ps []Property) *[]cdx.Property {
	if len(ps) == 0 {
		return nil
	}
	out := make([]cdx.Property, len(ps))
	for i, p := range ps {
		out[i] = cdx.Property{Name: p.Name, Value: p.Value}
	}
	return &out
}
