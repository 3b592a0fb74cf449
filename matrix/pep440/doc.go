// Package pep440 reads the versions and version specifiers of Python
// packages as PEP 440 defines them (wheel versions, Requires-Python,
// Requires-Dist pins): epochs, pre-, post- and dev-releases, local labels,
// and numbers up to 2^64-1. It wraps github.com/aquasecurity/go-pep440-version
// (the library trivy uses) and adds what that library lacks; every
// addition is listed in the package README with the pypa/packaging test
// that needs it.
//
// gpuimg's own constraint flags (--torch 2.3, where 2.3 means any 2.3.x)
// are not PEP 440 and are read by matrix.ParseConstraint instead.
package pep440
