package builder

import (
	"fmt"
	"strings"

	"github.com/gpuimg/gpuimg/matrix"
)

// stageFabricArchive holds a fabric installer's archive, fetched by
// BuildKit and checked against its sha256.
const stageFabricArchive = "gpuimg-fabric-archive"

// fabricDir is where the fabric step unpacks an installer archive; the
// step removes it.
const fabricDir = "/tmp/gpuimg-fabric"

// fabric is the fabric the build adds (Extras.Fabric) as the stack
// records it, with the installer archive it fetches; nil when the build
// adds none. A stack resolved without the fabric, or for another, is an
// error: the resolver's NCCL check and the packages for the stack's OS
// come from resolving with it.
type fabric struct {
	*matrix.StackFabric
	archive FabricSource // an installer's archive
}

func newFabric(d Definition) (*fabric, error) {
	want, sf := d.Extras.Fabric, d.Stack.Fabric
	switch {
	case want == "" && sf == nil:
		return nil, nil
	case want == "":
		return nil, fmt.Errorf("the stack names fabric %s, which the build does not add: build with --fabric %s", sf.Name, sf.Name)
	case sf == nil || !strings.EqualFold(sf.Name, want):
		return nil, fmt.Errorf("the stack was not resolved for fabric %s: resolve it with the fabric (gpuimg build --fabric %s resolves it so)", want, want)
	}
	f := &fabric{StackFabric: sf}
	if sf.Installer == nil {
		return f, nil
	}
	if d.Extras.FabricSource == "" {
		return nil, fmt.Errorf("fabric %s installs from %s, whose sha256 the matrix does not record: pin it with --fabric-source %s#sha256=HEX (its sha256sum; or a mirror's URL)",
			sf.Name, sf.Installer.ArchiveURL(), sf.Installer.ArchiveURL())
	}
	src, err := ParseFabricSource(d.Extras.FabricSource)
	if err != nil {
		return nil, err
	}
	f.archive = src
	return f, nil
}

// fabricStages declares the stage holding the fabric's installer archive,
// if it has one.
func (g *gen) fabricStages() {
	f := g.fabric
	if f == nil || f.Installer == nil {
		return
	}
	g.w("\n# Fabric %s: the installer archive, pinned by sha256.\n", f.Name)
	g.w("FROM scratch AS %s\n", stageFabricArchive)
	g.w("ADD --checksum=sha256:%s %s /installer.tar.gz\n", f.archive.SHA256, f.archive.URL)
}

// fabricLayer adds the fabric's user space to the current stage, in a
// step of its own right on the base (and the standalone CPython): its
// layer depends only on them, so every variant on the base shares it. It
// is the same step in the python stage and in the layered image, so
// BuildKit runs it once.
func (g *gen) fabricLayer() {
	f := g.fabric
	if f == nil || f.HostDir != "" {
		return
	}
	s := g.d.Stack
	if f.Installer == nil {
		g.w("\n# Fabric %s: %s from %s's package repositories.\n", f.Name, strings.Join(f.Packages, ", "), s.OS)
		g.w("RUN%s%s \\\n    %s\n", pkgCacheMounts(g.k, s.OS), g.secrets, clamped(installCmd(g.k, f.Packages)))
	} else {
		in := f.Installer
		// The installer installs its packages with the OS's package
		// manager: the same caches, and the same run files removed.
		clean := "rm -rf " + strings.Join(pkgRunFiles(g.k), " ")
		prep := ""
		if g.k.family == "apt" {
			prep = "rm -f /etc/apt/apt.conf.d/docker-clean && apt-get update && "
		}
		g.w("\n# Fabric %s: %s/%s (release %s as the matrix names it) run inside the image.\n", f.Name, in.Dir, in.Script, in.Version)
		g.w("RUN%s%s --mount=type=bind,from=%s,source=/installer.tar.gz,target=/tmp/gpuimg-fabric.tar.gz \\\n    %s\n",
			pkgCacheMounts(g.k, s.OS), g.secrets, stageFabricArchive, clamped(fmt.Sprintf("%smkdir -p %s && tar -xzf /tmp/gpuimg-fabric.tar.gz -C %s \\\n && cd %s/%s && ./%s %s \\\n && cd / && rm -rf %s && %s",
				prep, fabricDir, fabricDir, fabricDir, in.Dir, in.Script, strings.Join(quoteAll(in.Args), " "), fabricDir, clean)))
	}
	if len(f.LibraryPath) > 0 {
		g.w("ENV LD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}\n", strings.Join(f.LibraryPath, ":"))
	}
}
