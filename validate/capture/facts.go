package capture

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/gpuimg/gpuimg/matrix"
	"github.com/gpuimg/gpuimg/validate"
)

// Facts are what one environment holds, as capture and diff compare
// them. Every list is sorted; the JSON field names are part of
// docs/schemas/capture.schema.json.
type Facts struct {
	// Partial is true for facts read from a capture file's YAML: what it
	// pins, not everything installed (Diff compares only those).
	Partial bool `json:"partial,omitempty"`
	// OS is NVIDIA's name of the OS (debian12, ubuntu22.04).
	OS     string `json:"os,omitempty"`
	Python string `json:"python,omitempty"`
	// CUDA is the toolkit's version (version.json, else libcudart).
	CUDA string `json:"cuda,omitempty"`
	// Frameworks are torch, tensorflow and jax as installed.
	Frameworks map[string]Framework `json:"frameworks,omitempty"`
	// OSPackages are dpkg's installed packages, and the rpm database's
	// (Manager "rpm"); Manual those installed by hand (dpkg: not marked
	// Auto-Installed by apt, not part of a minimal base; rpm: required by
	// no other package).
	OSPackages []OSPackage `json:"os_packages,omitempty"`
	// Python distributions of every environment (venvs, site-packages).
	Dists []Dist `json:"python_dists,omitempty"`
	// CUDAComponents are CUDA's libraries and toolkit components by file.
	CUDAComponents []Component `json:"cuda_components,omitempty"`
	// Conda are conda-meta's records.
	Conda []Conda `json:"conda,omitempty"`
	// DriverFloor is the oldest driver that runs the environment strictly.
	DriverFloor string `json:"driver_floor,omitempty"`
	// Env are the environment variables that shape the stack (ShapesStack),
	// less those the secrets check flags.
	Env map[string]string `json:"env,omitempty"`
	// DroppedEnv names the variables the secrets check flagged (values
	// never kept).
	DroppedEnv []string `json:"dropped_env,omitempty"`
	// Unowned are files under /opt, /usr/local and /srv no package owns,
	// outside Python and conda environments and runfile CUDA trees.
	Unowned []string `json:"unowned_files,omitempty"`
	// RunfileCUDA are /usr/local/cuda-X.Y trees no package owns.
	RunfileCUDA []string `json:"runfile_cuda,omitempty"`
	// Files are every regular file (Options.Files only).
	Files []string `json:"files,omitempty"`
}

// Framework is one framework as installed.
type Framework struct {
	Version string `json:"version"`
	// Local is the PEP 440 local label (cu124), CUDA the CUDA it was
	// built for (torch/version.py, else the label).
	Local string `json:"local,omitempty"`
	CUDA  string `json:"cuda,omitempty"`
}

// OSPackage is one dpkg package.
type OSPackage struct {
	Name     string `json:"name"`
	Version  string `json:"version"`
	Manual   bool   `json:"manual,omitempty"`
	Priority string `json:"priority,omitempty"`
	// Manager is "rpm" for the rpm database's packages; dpkg's have none.
	Manager string `json:"manager,omitempty"`
}

// Dist is one Python distribution.
type Dist struct {
	Name    string `json:"name"`
	Version string `json:"version"` // with the local label (2.6.0+cu124)
	// Path is the dist-info directory.
	Path      string   `json:"path"`
	Installer string   `json:"installer,omitempty"`
	Requires  []string `json:"requires,omitempty"`
	// DirectURL is PEP 610's url (git+https://…, file://…) for a
	// distribution pip installed from a URL, a path or in editable mode.
	DirectURL string `json:"direct_url,omitempty"`
	Editable  bool   `json:"editable,omitempty"`
}

// Component is a CUDA component found by file.
type Component struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
	Path    string `json:"path"`
	Pip     bool   `json:"pip,omitempty"`
}

// Conda is one conda-meta record.
type Conda struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Channel string `json:"channel,omitempty"`
	Env     string `json:"env"`
}

// CollectOptions steer Collect.
type CollectOptions struct {
	// Name names the source in messages.
	Name string
	DB   *matrix.DB
	// Files collects every regular file's path (diff --files).
	Files  bool
	Limits validate.Limits
}

// Collect reads img (its layers twice: validate's inventory, then the
// install records) into Facts, with the image config's environment.
func Collect(ctx context.Context, img v1.Image, opt CollectOptions) (*Facts, *validate.Report, error) {
	rep, err := validate.Inspect(ctx, img, validate.Options{Name: opt.Name, DB: opt.DB, Inventory: true, Limits: opt.Limits})
	if err != nil {
		return nil, nil, fmt.Errorf("inspect %s: %w", opt.Name, err)
	}
	c := newCollector(opt.Files)
	defer c.close()
	w, err := validate.Walk(ctx, img, opt.Limits, c.visit)
	if err != nil {
		return nil, nil, fmt.Errorf("read install records of %s: %w", opt.Name, err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, nil, fmt.Errorf("read image config of %s: %w", opt.Name, err)
	}
	f := &Facts{OS: rep.Found.OS, Python: rep.Found.Python, CUDA: rep.Found.CUDA}
	inv := rep.Inventory
	if inv != nil {
		f.DriverFloor = inv.DriverFloor
		for _, cc := range inv.CUDA {
			f.CUDAComponents = append(f.CUDAComponents, Component{Name: cc.Name, Version: cc.Version, Path: cc.Path, Pip: cc.Pip})
		}
	}
	f.OSPackages = osPackages(c.status.b, c.extended.b)
	if c.rpm.tmp != "" {
		rpms, err := rpmPackages(c.rpm.tmp)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", opt.Name, err)
		}
		f.OSPackages = append(f.OSPackages, rpms...)
	}
	f.Dists = dists(c, w)
	f.Frameworks = frameworks(rep, f.Dists)
	for _, p := range c.conda {
		if w.Visible(p.ref.layer, p.ref.path) {
			f.Conda = append(f.Conda, Conda{Name: p.Name, Version: p.Version, Channel: p.Channel, Env: "/" + p.env})
		}
	}
	slices.SortFunc(f.Conda, func(a, b Conda) int { return strings.Compare(a.Env+a.Name, b.Env+b.Name) })
	f.RunfileCUDA, f.Unowned = unowned(c, w)
	for _, e := range c.allFiles {
		if w.Visible(e.layer, e.path) {
			f.Files = append(f.Files, "/"+e.path)
		}
	}
	slices.Sort(f.Files)
	env := append(environFile(c.environ.b), cfg.Config.Env...)
	f.Env, f.DroppedEnv = shapingEnv(env)
	return f, rep, nil
}

// dists are the visible dist-info directories with what pip recorded.
func dists(c *collector, w *validate.WalkResult) []Dist {
	var out []Dist
	for dir, m := range c.dists {
		if m.name == "" || !w.Visible(m.layer, dir+"/METADATA") {
			continue
		}
		d := Dist{Name: normalize(m.name), Version: m.version, Path: "/" + dir, Installer: m.installer, Requires: m.requires}
		if u := m.directURL; u != nil {
			d.DirectURL = u.URL
			if u.VCSInfo != nil && u.VCSInfo.VCS != "" && !strings.HasPrefix(u.URL, u.VCSInfo.VCS+"+") {
				d.DirectURL = u.VCSInfo.VCS + "+" + u.URL
			}
			if u.VCSInfo != nil && u.VCSInfo.CommitID != "" {
				d.DirectURL += "@" + u.VCSInfo.CommitID
			}
			d.Editable = u.DirInfo != nil && u.DirInfo.Editable
		}
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b Dist) int { return strings.Compare(a.Name+" "+a.Path, b.Name+" "+b.Path) })
	return out
}

// frameworks are torch, tensorflow and jax(lib) as found.
func frameworks(rep *validate.Report, ds []Dist) map[string]Framework {
	out := map[string]Framework{}
	for _, d := range ds {
		name := d.Name
		if name == "tensorflow" || name == "jax" || name == "torch" {
			ver, local, _ := strings.Cut(d.Version, "+")
			out[name] = Framework{Version: ver, Local: local, CUDA: labelCUDA(local)}
		}
	}
	if t := rep.Found.Torch; t != nil {
		fw := out["torch"]
		fw.CUDA = t.CUDA
		if fw.Version == "" {
			fw.Version, fw.Local, _ = strings.Cut(t.Version, "+")
		}
		out["torch"] = fw
	}
	for _, d := range ds {
		if d.Name == "jaxlib" {
			if fw, ok := out["jax"]; ok && fw.Local == "" {
				_, fw.Local, _ = strings.Cut(d.Version, "+")
				out["jax"] = fw
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// labelCUDA reads a cuXYZ local label as X.YZ's major.minor (cu124 → 12.4).
func labelCUDA(local string) string {
	v, ok := strings.CutPrefix(local, "cu")
	if !ok || len(v) < 3 || strings.Trim(v, "0123456789") != "" {
		return ""
	}
	return v[:len(v)-1] + "." + v[len(v)-1:]
}

// normalize is PEP 503's name normalization.
func normalize(name string) string {
	name = strings.ToLower(name)
	var b strings.Builder
	dash := false
	for _, r := range name {
		if r == '-' || r == '_' || r == '.' {
			if !dash {
				b.WriteByte('-')
			}
			dash = true
			continue
		}
		dash = false
		b.WriteRune(r)
	}
	return b.String()
}

// osPackages reads dpkg's status (installed packages only) and apt's
// extended_states (Auto-Installed: 1 marks a dependency). A package is
// manual when apt did not mark it, no other installed package depends on
// it (debootstrap and docker builds leave no apt marks: a dependency
// pulled in there is not what the user asked for) and it is not
// required, important or essential (what a minimal base lays down).
func osPackages(status, extended []byte) []OSPackage {
	auto := map[string]bool{}
	for _, st := range stanzas(extended) {
		if st["auto-installed"] == "1" {
			auto[st["package"]] = true
		}
	}
	var installed []map[string]string
	needed := map[string]bool{}
	for _, st := range stanzas(status) {
		if !strings.HasSuffix(st["status"], " installed") {
			continue
		}
		installed = append(installed, st)
		for _, dep := range depNames(st["depends"] + "," + st["pre-depends"]) {
			if dep != st["package"] {
				needed[dep] = true
			}
		}
	}
	var out []OSPackage
	for _, st := range installed {
		p := OSPackage{Name: st["package"], Version: st["version"], Priority: st["priority"]}
		p.Manual = !auto[p.Name] && !needed[p.Name] && st["essential"] != "yes" && p.Priority != "required" && p.Priority != "important"
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b OSPackage) int { return strings.Compare(a.Name, b.Name) })
	return slices.CompactFunc(out, func(a, b OSPackage) bool { return a.Name == b.Name })
}

// depNames are the package names of a Depends field: every alternative,
// without version constraints or architecture qualifiers.
func depNames(field string) []string {
	var out []string
	for _, alt := range strings.FieldsFunc(field, func(r rune) bool { return r == ',' || r == '|' }) {
		name, _, _ := strings.Cut(strings.TrimSpace(alt), " ")
		name, _, _ = strings.Cut(name, "(")
		name, _, _ = strings.Cut(name, ":")
		if name = strings.TrimSpace(name); name != "" {
			out = append(out, name)
		}
	}
	return out
}

// stanzas splits a deb822 file into its paragraphs, keys lowercased;
// continuation lines are dropped.
func stanzas(b []byte) []map[string]string {
	var out []map[string]string
	cur := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), maxMeta)
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			if len(cur) > 0 {
				out = append(out, cur)
			}
			cur = map[string]string{}
			continue
		}
		if line[0] == ' ' || line[0] == '\t' {
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			cur[strings.ToLower(k)] = strings.TrimSpace(v)
		}
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// unowned are the runfile CUDA trees and the files under /opt,
// /usr/local and /srv that no dpkg package owns and that are not inside
// a Python or conda environment or a runfile tree. A symlink to a path a
// package owns is the package's layout (base-files' /usr/local/man →
// share/man, made by its maintainer script), not a hand-copied file.
func unowned(c *collector, w *validate.WalkResult) (runfile, files []string) {
	for _, d := range slices.Sorted(maps.Keys(c.runfile)) {
		if !c.owned["usr/local/"+d+"/version.json"] && !ownsUnder(c.owned, "usr/local/"+d+"/") {
			runfile = append(runfile, "/usr/local/"+d)
		}
	}
	skip := append(slices.Clone(c.envRoots), "usr/local/cuda/")
	for _, d := range runfile {
		skip = append(skip, strings.TrimPrefix(d, "/")+"/")
	}
	for _, e := range c.files {
		if c.owned[e.path] || e.link != "" && (c.owned[e.link] || c.dirs[e.link]) || !w.Visible(e.layer, e.path) || underAny(e.path, skip) || inSitePackages(e.path) {
			continue
		}
		files = append(files, "/"+e.path)
	}
	slices.Sort(files)
	return runfile, slices.Compact(files)
}

func ownsUnder(owned map[string]bool, prefix string) bool {
	for p := range owned {
		if strings.HasPrefix(p, prefix) {
			return true
		}
	}
	return false
}

func underAny(p string, roots []string) bool {
	for _, r := range roots {
		if strings.HasPrefix(p, r) {
			return true
		}
	}
	return false
}

// inSitePackages: pip's files under /usr/local/lib/python3.X are pip's,
// listed as distributions. (Console scripts pip wrote to /usr/local/bin
// are listed as unowned: the capture does not read RECORD.)
func inSitePackages(p string) bool {
	return strings.Contains(p, "/site-packages/") || strings.Contains(p, "/dist-packages/")
}

// environFile reads /etc/environment's KEY=VALUE lines (quotes removed).
func environFile(b []byte) []string {
	var out []string
	for line := range strings.Lines(string(b)) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") || !strings.Contains(line, "=") {
			continue
		}
		k, v, _ := strings.Cut(strings.TrimPrefix(line, "export "), "=")
		out = append(out, strings.TrimSpace(k)+"="+strings.Trim(v, `"'`))
	}
	return out
}
