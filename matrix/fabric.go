package matrix

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrUnknownFabric is wrapped by the error of a fabric name that matches
// no fabrics: row.
var ErrUnknownFabric = errors.New("unknown fabric")

// Fabric is a multi-node network an image's NCCL must use to scale past
// one node (data/fabrics.yaml): what user space the image must carry for
// it, where each installer puts it, the version rules between the pieces
// and NCCL, and what the host provides instead. validate --fabric reads
// it; the checks themselves are validate's.
type Fabric struct {
	// Name is efa, infiniband, tcpxo or gib.
	Name  string `yaml:"name" json:"name"`
	Title string `yaml:"title" json:"title"`
	// Plugin is the NCCL network plugin the image must carry, nil when
	// NCCL's own transport drives the fabric (NET/IB) or the host
	// installs the plugin (Host).
	Plugin *FabricPlugin `yaml:"plugin" json:"plugin,omitempty"`
	// Provider is the libfabric provider the plugin needs (efa), empty
	// when no libfabric is involved.
	Provider string `yaml:"provider" json:"provider,omitempty"`
	// ProviderNeeds are the libraries a libfabric with Provider built in
	// links (libefa.so.1: libfabric's prov/efa links rdma-core's efadv
	// library); a provider built as a module is
	// <libdir>/libfabric/lib<Provider>-fi.so instead.
	ProviderNeeds []string `yaml:"provider_needs" json:"provider_needs,omitempty"`
	// VerbsProvider is the rdma-core (libibverbs) provider the fabric's
	// devices need (efa, mlx5), empty when none: libibverbs loads the
	// providers that a libibverbs.d/NAME.driver file (or RDMAV_DRIVERS)
	// names, as lib<NAME>-rdmav<ABI>.so.
	VerbsProvider string `yaml:"verbs_provider" json:"verbs_provider,omitempty"`
	// Libraries are the user-space libraries the image must carry, by
	// soname.
	Libraries []FabricLib `yaml:"libraries" json:"libraries,omitempty"`
	// Env are settings (image environment or /etc/nccl.conf) that turn
	// the fabric off.
	Env []FabricEnv `yaml:"env" json:"env,omitempty"`
	// Host, when set, is what the node installs for the pods: the image
	// carries none of it, and must not carry what shadows it.
	Host *FabricHost `yaml:"host" json:"host,omitempty"`
	// AllReduce, when set, is the bandwidth floor a multi-node all-reduce
	// over the fabric must reach.
	AllReduce *AllReduceFloor `yaml:"allreduce" json:"allreduce,omitempty"`
	// Transport are the NCCL log lines (NCCL_DEBUG=INFO) that show the
	// fabric in use, as regular expressions.
	Transport []string `yaml:"transport" json:"transport,omitempty"`
	// Build, when set, is how gpuimg build --fabric adds the user space to
	// an image; nil for a fabric whose user space the node installs (Host)
	// or that no source says how to install.
	Build *FabricBuild `yaml:"build" json:"build,omitempty"`
	Row   `yaml:",inline"`
}

// FabricBuild is how a build adds a fabric's user space: OS packages from
// the repositories the base image configures, or an installer archive run
// inside the image (the EFA installer), never both.
type FabricBuild struct {
	// Apt and Dnf are the OS packages, by package manager.
	Apt []string `yaml:"apt" json:"apt,omitempty"`
	Dnf []string `yaml:"dnf" json:"dnf,omitempty"`
	// Installer is an archive the build fetches and runs.
	Installer *FabricInstaller `yaml:"installer" json:"installer,omitempty"`
	// LibraryPath are directories the build adds to LD_LIBRARY_PATH:
	// NCCL opens its plugin by name with dlopen, so an installer's
	// directory must be on the search path.
	LibraryPath []string `yaml:"library_path" json:"library_path,omitempty"`
	Source      string   `yaml:"source" json:"source"`
}

// FabricInstaller is an installer archive (a .tar.gz with one top
// directory holding Script).
type FabricInstaller struct {
	// URL is the archive of release Version, {version} in it replaced.
	URL     string  `yaml:"url" json:"url"`
	Version Version `yaml:"version" json:"version"`
	// Dir is the directory the archive unpacks to, Script the program in
	// it and Args its arguments for a container image (no kernel module,
	// no limits, no device check).
	Dir    string   `yaml:"dir" json:"dir"`
	Script string   `yaml:"script" json:"script"`
	Args   []string `yaml:"args" json:"args"`
}

// ArchiveURL is the installer's archive URL for its Version.
func (i FabricInstaller) ArchiveURL() string {
	return strings.ReplaceAll(i.URL, "{version}", i.Version.String())
}

// Packages are the OS packages that bring the fabric for package manager
// pm (apt or dnf).
func (b FabricBuild) Packages(pm string) []string {
	if pm == "dnf" {
		return b.Dnf
	}
	return b.Apt
}

// FabricPlugin is an NCCL network plugin and its releases' rules.
type FabricPlugin struct {
	// Name is the project (aws-ofi-nccl).
	Name string `yaml:"name" json:"name"`
	// Files are the library names NCCL opens, newest installers' first
	// (libnccl-net-ofi.so, then libnccl-net.so). NCCL opens libnccl-net.so
	// when NCCL_NET_PLUGIN is unset, libnccl-net-NAME.so for
	// NCCL_NET_PLUGIN=NAME.
	Files []string `yaml:"files" json:"files"`
	// Dirs are where installers put them (EFA installer: /opt/amazon/…).
	Dirs []string `yaml:"dirs" json:"dirs"`
	// NetPlugin is the NCCL_NET_PLUGIN value that selects it (ofi).
	NetPlugin string `yaml:"net_plugin" json:"net_plugin,omitempty"`
	// NetNames are the network names it registers, the NCCL_NET values
	// that select it (Libfabric, AWS Libfabric).
	NetNames []string `yaml:"net_names" json:"net_names,omitempty"`
	// Releases are its releases, newest first after Load.
	Releases []PluginRelease `yaml:"releases" json:"releases"`
}

// PluginRelease is one release of a plugin and the NCCL and libfabric it
// works with.
type PluginRelease struct {
	Version Version `yaml:"version" json:"version"`
	// MinNCCL is the oldest NCCL release it works with.
	MinNCCL Version `yaml:"min_nccl" json:"min_nccl"`
	// TestedNCCL are the NCCL releases its notes say it was tested with.
	TestedNCCL []Version `yaml:"tested_nccl" json:"tested_nccl"`
	// MinLibfabric is the oldest libfabric it builds and runs with.
	MinLibfabric Version `yaml:"min_libfabric" json:"min_libfabric"`
	Row          `yaml:",inline"`
}

// FabricLib is a user-space library a fabric needs in the image.
type FabricLib struct {
	Soname string `yaml:"soname" json:"soname"`
	// What names it for a person (rdma-core's libibverbs).
	What string `yaml:"what" json:"what"`
	// Dirs are where installers put it, besides the default library
	// directories.
	Dirs []string `yaml:"dirs" json:"dirs,omitempty"`
	// Optional libraries are a warning when missing, not a failure
	// (GDRCopy: NCCL works without it, slower for small messages).
	Optional bool `yaml:"optional" json:"optional,omitempty"`
	// Install says how to add it.
	Install string `yaml:"install" json:"install"`
}

// FabricEnv is a setting that turns a fabric off: set to anything but
// one of Allow (case-insensitive; empty Allow: set at all), or to one of
// Deny.
type FabricEnv struct {
	Name  string   `yaml:"name" json:"name"`
	Allow []string `yaml:"allow" json:"allow,omitempty"`
	Deny  []string `yaml:"deny" json:"deny,omitempty"`
	Why   string   `yaml:"why" json:"why"`
}

// Disables says whether value v of the setting turns the fabric off.
func (e FabricEnv) Disables(v string) bool {
	v = strings.TrimSpace(v)
	eq := func(s string) bool { return strings.EqualFold(s, v) }
	if len(e.Deny) > 0 {
		return slices.ContainsFunc(e.Deny, eq)
	}
	return !slices.ContainsFunc(e.Allow, eq)
}

// AllReduceFloor is the lowest all-reduce bandwidth a source accepts for
// a fabric: at Bytes per all-reduce, the algorithm bandwidth (bytes over
// time, as nccl-tests' algbw) at least MinAlgbwGBs GB/s.
type AllReduceFloor struct {
	Bytes       int64    `yaml:"bytes" json:"bytes"`
	MinAlgbwGBs float64  `yaml:"min_algbw_gbs" json:"min_algbw_gbs"`
	Source      string   `yaml:"source" json:"source"`
	Notes       []string `yaml:"notes" json:"notes,omitempty"`
}

// FabricHost is what a node installs for the pods of a fabric.
type FabricHost struct {
	// Dir is where pods see it (/usr/local/nvidia/lib64).
	Dir string `yaml:"dir" json:"dir"`
	// Provides are the libraries found there (libnccl.so.2, the plugin).
	Provides []string `yaml:"provides" json:"provides"`
	// Installer is the image or package that installs them.
	Installer string `yaml:"installer" json:"installer"`
}

// Fabric returns the fabrics: row with this name (case-insensitive).
func (db *DB) Fabric(name string) (Fabric, error) {
	for _, f := range db.Fabrics {
		if strings.EqualFold(f.Name, strings.TrimSpace(name)) {
			return f, nil
		}
	}
	return Fabric{}, fmt.Errorf("%w %q: want one of %s (gpuimg matrix list fabrics)", ErrUnknownFabric, name, strings.Join(db.FabricNames(), ", "))
}

// FabricNames are the names of the fabrics: rows.
func (db *DB) FabricNames() []string {
	names := make([]string, len(db.Fabrics))
	for i, f := range db.Fabrics {
		names[i] = f.Name
	}
	return names
}

// NCCLRange is the NCCL every recorded release of the plugin accepts,
// as the oldest NCCL any release accepts and the newest any was tested
// with: what can be said of a plugin whose release is not known.
func (p FabricPlugin) NCCLRange() (oldest, newestTested Version) {
	for _, r := range p.Releases {
		if lo := r.MinNCCL; !lo.IsZero() && (oldest.IsZero() || lo.Less(oldest)) {
			oldest = lo
		}
		for _, t := range r.TestedNCCL {
			if newestTested.Less(t) {
				newestTested = t
			}
		}
	}
	return oldest, newestTested
}

// NCCLFit is how an NCCL release fits a plugin's recorded releases.
type NCCLFit int

// NCCL fits.
const (
	// NCCLSupported: within the range and no newer than a tested release.
	NCCLSupported NCCLFit = iota
	// NCCLUntested: newer than any recorded release was tested with.
	NCCLUntested
	// NCCLTooOld: older than every recorded release supports.
	NCCLTooOld
)

// FitNCCL says how NCCL v (its major.minor.patch) fits the plugin's
// releases (NCCLRange): the rule validate's fabric:NAME:nccl check and a
// builder choosing a stack for a fabric share.
func (p FabricPlugin) FitNCCL(v Version) NCCLFit {
	oldest, tested := p.NCCLRange()
	v = v.Trunc(3)
	switch {
	case v.Less(oldest):
		return NCCLTooOld
	case tested.Less(v):
		return NCCLUntested
	}
	return NCCLSupported
}

// validateFabric returns what is wrong with one fabrics: row.
func (db *DB) validateFabric(f Fabric) []string {
	var bad []string
	if f.Name == "" || strings.ContainsAny(f.Name, " \t/") {
		bad = append(bad, fmt.Sprintf("fabric name %q: want one word such as efa", f.Name))
	}
	if f.Plugin != nil {
		if f.Plugin.Name == "" || len(f.Plugin.Files) == 0 || len(f.Plugin.Releases) == 0 {
			bad = append(bad, fmt.Sprintf("fabric %s: plugin needs name, files and releases", f.Name))
		}
		for _, r := range f.Plugin.Releases {
			if r.Version.IsZero() || r.MinNCCL.IsZero() {
				bad = append(bad, fmt.Sprintf("fabric %s: plugin release needs version and min_nccl", f.Name))
			}
			if r.Source != "" {
				if _, ok := db.Sources[r.Source]; !ok {
					bad = append(bad, fmt.Sprintf("fabric %s: plugin release %s names source %q, which no file defines under sources:", f.Name, r.Version, r.Source))
				}
			}
		}
	}
	if f.Provider != "" && len(f.ProviderNeeds) == 0 {
		bad = append(bad, fmt.Sprintf("fabric %s: provider %s needs provider_needs (the libraries a libfabric with it built in links)", f.Name, f.Provider))
	}
	for _, l := range f.Libraries {
		if l.Soname == "" || l.What == "" {
			bad = append(bad, fmt.Sprintf("fabric %s: libraries need soname and what", f.Name))
		}
	}
	for _, e := range f.Env {
		if e.Name == "" || e.Why == "" || len(e.Allow) > 0 && len(e.Deny) > 0 {
			bad = append(bad, fmt.Sprintf("fabric %s: env %q needs a name, a why, and allow or deny (not both)", f.Name, e.Name))
		}
	}
	if a := f.AllReduce; a != nil {
		if a.Bytes <= 0 || a.MinAlgbwGBs <= 0 {
			bad = append(bad, fmt.Sprintf("fabric %s: allreduce needs bytes and min_algbw_gbs", f.Name))
		}
		if _, ok := db.Sources[a.Source]; !ok {
			bad = append(bad, fmt.Sprintf("fabric %s: allreduce names source %q, which no file defines under sources:", f.Name, a.Source))
		}
	}
	if b := f.Build; b != nil {
		hasPkgs := len(b.Apt) > 0 || len(b.Dnf) > 0
		switch {
		case hasPkgs == (b.Installer != nil):
			bad = append(bad, fmt.Sprintf("fabric %s: build needs OS packages (apt, dnf) or an installer, not both", f.Name))
		case hasPkgs && (len(b.Apt) == 0 || len(b.Dnf) == 0):
			bad = append(bad, fmt.Sprintf("fabric %s: build needs packages for both apt and dnf", f.Name))
		case b.Installer != nil && (b.Installer.URL == "" || b.Installer.Version.IsZero() || b.Installer.Dir == "" || b.Installer.Script == ""):
			bad = append(bad, fmt.Sprintf("fabric %s: build installer needs url, version, dir and script", f.Name))
		}
		if _, ok := db.Sources[b.Source]; !ok {
			bad = append(bad, fmt.Sprintf("fabric %s: build names source %q, which no file defines under sources:", f.Name, b.Source))
		}
		if f.Host != nil {
			bad = append(bad, fmt.Sprintf("fabric %s: the node installs its user space (host), so it has no build", f.Name))
		}
	}
	if f.Host != nil && f.Host.Dir == "" {
		bad = append(bad, fmt.Sprintf("fabric %s: host needs dir", f.Name))
	}
	return bad
}
