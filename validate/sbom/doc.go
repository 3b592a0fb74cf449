// Package sbom writes a validate.Inventory as an SBOM: SPDX 2.3 JSON
// (spdx/tools-golang) or CycloneDX 1.6 JSON (cyclonedx-go), with package
// URLs in the form scanners match and the GPU facts as properties.
package sbom
