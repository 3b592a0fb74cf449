package sbom

import (
	"crypto/sha256"
	"fmt"
	"sort"
	"strings"

	"github.com/gpuimg/gpuimg/validate"
)

// Subject is the image an SBOM describes.
type Subject struct {
	// Name is the image's reference as the user gave it.
	Name string
	// Digest is the manifest digest (sha256:…).
	Digest string
	// Platform is os/arch[/variant], when known.
	Platform string
}

// Kind is what a component is.
type Kind string

// The kinds of component.
const (
	KindImage  Kind = "image"
	KindBase   Kind = "base-image"
	KindOS     Kind = "os"
	KindDeb    Kind = "deb"
	KindPython Kind = "python"
	KindCUDA   Kind = "cuda"
)

// Property names, the same in both formats (CycloneDX properties, SPDX
// package comments).
const (
	PropArchs       = "gpuimg:cuda:archs"   // SASS architectures, space-separated
	PropPTX         = "gpuimg:cuda:ptx"     // PTX architectures
	PropSoname      = "gpuimg:cuda:soname"  // a library's DT_SONAME
	PropFamily      = "gpuimg:cuda:family"  // cublas, cudnn, nccl, tensorrt, toolkit …
	PropPip         = "gpuimg:cuda:pip"     // "true" for a library of an NVIDIA wheel
	PropPath        = "gpuimg:path"         // where it was found
	PropLocal       = "gpuimg:python:local" // PEP 440 local label ("cu121")
	PropFullVersion = "gpuimg:version"      // the version as installed ("2.3.1+cu121")
	PropTorchCUDA   = "gpuimg:python:cuda"  // the CUDA torch was built for
	PropDebSource   = "gpuimg:deb:source"   // the source package
	PropCUDAVersion = "gpuimg:cuda:version" // the image's CUDA
	PropRequireCUDA = "gpuimg:nvidia:require-cuda"
	PropDriverFloor = "gpuimg:nvidia:driver-floor"
	PropDriverCompt = "gpuimg:nvidia:driver-floor-compat"
	PropPlatform    = "gpuimg:platform"
)

// Property is a name and a value.
type Property struct{ Name, Value string }

// Component is one entry of the SBOM, the same for both formats.
type Component struct {
	Kind    Kind
	Name    string
	Version string
	PURL    PURL
	Props   []Property
}

// Components is the inventory as SBOM components: the image first, then
// the base image and the OS, then every package sorted by kind, name,
// version and path, so the same inventory always gives the same list.
func Components(sub Subject, inv *validate.Inventory) []Component {
	img := Component{Kind: KindImage, Name: sub.Name, Version: sub.Digest, PURL: OCIPURL(sub.Name, sub.Digest)}
	img.Props = props(
		PropPlatform, sub.Platform,
		PropCUDAVersion, inv.CUDAVersion,
		PropRequireCUDA, inv.RequireCUDA,
		PropDriverFloor, inv.DriverFloor,
		PropDriverCompt, inv.DriverFloorCompat,
	)
	out := []Component{img}
	if inv.Base.Name != "" || inv.Base.Digest != "" {
		name := inv.Base.Name
		if name == "" {
			name = "base"
		}
		base := Component{Kind: KindBase, Name: name, Version: inv.Base.Digest}
		if inv.Base.Digest != "" {
			base.PURL = OCIPURL(name, inv.Base.Digest)
		}
		out = append(out, base)
	}
	if inv.OS.ID != "" {
		out = append(out, Component{Kind: KindOS, Name: inv.OS.ID, Version: inv.OS.VersionID, Props: props("gpuimg:os:pretty", inv.OS.Pretty)})
	}
	var rest []Component
	for _, p := range inv.OSPackages {
		rest = append(rest, Component{Kind: KindDeb, Name: p.Name, Version: p.Version,
			PURL:  DebPURL(inv.OS.ID, inv.OS.VersionID, p.Name, p.Version, p.Arch),
			Props: props(PropDebSource, p.Source)})
	}
	for _, d := range inv.Python {
		full := d.Version
		if d.Local != "" {
			full += "+" + d.Local
		}
		rest = append(rest, Component{Kind: KindPython, Name: d.Name, Version: d.Version,
			PURL: PyPIPURL(d.Name, d.Version),
			Props: props(
				PropLocal, d.Local,
				PropFullVersion, ifDiffers(full, d.Version),
				PropTorchCUDA, d.CUDA,
				PropArchs, strings.Join(d.Kernels.SASS, " "),
				PropPTX, strings.Join(d.Kernels.PTX, " "),
				PropPath, "/"+d.Path,
			)})
	}
	for _, c := range inv.CUDA {
		pip := ""
		if c.Pip {
			pip = "true"
		}
		rest = append(rest, Component{Kind: KindCUDA, Name: c.Name, Version: c.Version,
			PURL: CUDAPURL(c.Name, c.Version),
			Props: props(
				PropFamily, c.Family,
				PropSoname, c.Soname,
				PropArchs, strings.Join(c.Kernels.SASS, " "),
				PropPTX, strings.Join(c.Kernels.PTX, " "),
				PropPip, pip,
				PropPath, "/"+c.Path,
			)})
	}
	sort.SliceStable(rest, func(i, j int) bool {
		a, b := rest[i], rest[j]
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		if a.Version != b.Version {
			return a.Version < b.Version
		}
		return prop(a.Props, PropPath) < prop(b.Props, PropPath)
	})
	return append(out, rest...)
}

// props pairs names and values, leaving out empty values.
func props(kv ...string) []Property {
	var out []Property
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			out = append(out, Property{Name: kv[i], Value: kv[i+1]})
		}
	}
	return out
}

func prop(ps []Property, name string) string {
	for _, p := range ps {
		if p.Name == name {
			return p.Value
		}
	}
	return ""
}

func ifDiffers(a, b string) string {
	if a == b {
		return ""
	}
	return a
}

// uuidOf is a name-based UUID (the version-5 layout over SHA-256) of
// parts: the same image gives the same serial number and namespace.
func uuidOf(parts ...string) string {
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	b := sum[:16]
	b[6] = b[6]&0x0f | 0x50
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
