package validate

import (
	"cmp"
	"debug/elf"
	"fmt"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/gpuimg/gpuimg/matrix"
)

// The fabric checks (validate --fabric, and --target for a fleet whose
// row names a fabric): whether the image carries the user space its
// multi-node network needs, read from the layers without the hardware.
// Each is named fabric:NAME:WHAT and its message names the fix:
//
//   - plugin: the NCCL network plugin (matrix.Fabric.Plugin) is in the
//     image, and NCCL will open it: NCCL dlopens libnccl-net.so, or
//     libnccl-net-NAME.so for NCCL_NET_PLUGIN=NAME, by name, so it must
//     lie on the search path (LD_LIBRARY_PATH, /etc/ld.so.conf.d, the
//     default directories);
//   - closure: the plugin and the fabric's libraries find every DT_NEEDED
//     library in the image (the libs/closure resolver, elfresolve.go);
//   - libs: each library of the fabric's row, by the name it is loaded by;
//   - provider: the libfabric the plugin resolves has the provider the
//     fabric needs: built in, libfabric links the provider's libraries
//     (DT_NEEDED libefa.so.1 for efa, libfabric's prov/efa build), or as a
//     module it is libfabric/lib<provider>-fi.so beside libfabric;
//   - nccl: the NCCL the framework loads (an NVIDIA wheel's before the
//     system's, as Found.NCCL) is within the plugin's releases' range;
//     a wheel's NCCL beside a different system NCCL is a finding
//     (nccl/shadow), and for a fabric whose host installs NCCL any NCCL
//     the image carries is one;
//   - env: NCCL_* and FI_* settings of the image config and /etc/nccl.conf
//     (the environment wins, as NCCL's setenv(…, 0) gives) do not turn the
//     fabric off (matrix.Fabric.Env).

// inFabricScope says whether the file at p is read for the fabric checks:
// NCCL's plugins and NCCL itself, libfabric and its provider modules,
// rdma-core's libraries and GDRCopy's, wherever they lie.
func inFabricScope(p string) bool {
	base := path.Base(p)
	if strings.HasSuffix(base, "-fi.so") && strings.HasSuffix(path.Dir(p), "/libfabric") {
		return true
	}
	for _, pre := range []string{"libnccl-net", "libnccl.so", "libfabric.so", "libefa.so", "libibverbs.so", "libmlx5.so", "librdmacm.so", "libgdrapi.so"} {
		if strings.HasPrefix(base, pre) {
			return true
		}
	}
	return false
}

// fabricCheck is the state of one fabric's checks.
type fabricCheck struct {
	c    *checker
	f    matrix.Fabric
	cl   *closure
	w    *WalkResult
	objs map[string]*elfObj // visible fabric-scope objects by path
	env  map[string]string  // effective NCCL/FI settings
	from map[string]string  // where each came from
}

func (fc *fabricCheck) name(what string) string { return "fabric:" + fc.f.Name + ":" + what }

func (fc *fabricCheck) add(what string, st Status, format string, args ...any) {
	fc.c.add(fc.name(what), st, "%s: %s", fc.f.Name, fmt.Sprintf(format, args...))
}

// fabrics runs the checks of each fabric once.
func (c *checker) fabrics(fabrics []matrix.Fabric, x *elfDeps, w *WalkResult) {
	if len(fabrics) == 0 {
		return
	}
	objs := map[string]*elfObj{}
	for i := range x.objs {
		o := &x.objs[i]
		if inFabricScope(o.path) && w.Visible(o.layer, o.path) {
			objs[o.path] = o
		}
	}
	env, from := ncclSettings(c.env, c.r.Found.ncclConf)
	for _, f := range fabrics {
		fc := &fabricCheck{c: c, f: f, cl: newClosure(x, w, c.env), w: w, objs: objs, env: env, from: from}
		fc.run()
	}
}

func (fc *fabricCheck) run() {
	var plugin *elfObj
	if fc.f.Plugin != nil {
		plugin = fc.plugin()
	}
	fc.libs(plugin)
	if fc.f.VerbsProvider != "" {
		fc.verbs()
	}
	if fc.f.Provider != "" {
		fc.provider(plugin)
	}
	fc.nccl()
	fc.settings()
	if fc.f.Host != nil {
		fc.host()
	}
}

// searchDirs is where dlopen(name) from NCCL looks: LD_LIBRARY_PATH, the
// ld.so cache (the directories /etc/ld.so.conf names), the default
// directories of the machine the fabric's objects are built for.
func (fc *fabricCheck) searchDirs() []string {
	var m elf.Machine
	for _, o := range fc.sortedObjs() {
		if o.dyn != nil {
			m = o.dyn.machine
			break
		}
	}
	return slices.Concat(fc.cl.ldPath, fc.cl.conf, defaultLibDirs(m))
}

// plugin finds the plugin's files, judges whether NCCL opens one, and
// returns the one it opens (else the first found).
func (fc *fabricCheck) plugin() *elfObj {
	p := fc.f.Plugin
	var found []*elfObj
	for _, o := range fc.sortedObjs() {
		if slices.Contains(p.Files, path.Base(o.path)) {
			found = append(found, o)
		}
	}
	if len(found) == 0 {
		fc.add("plugin", matrix.Fail, "no %s plugin (%s) in the image, so NCCL falls back to TCP sockets across nodes: install it (it goes to %s)", p.Name, strings.Join(p.Files, " or "), strings.Join(p.Dirs, ", "))
		return nil
	}
	// What NCCL opens: NCCL_NET_PLUGIN's names (NAME, then
	// libnccl-net-NAME.so), else libnccl-net.so.
	want := []string{"libnccl-net.so"}
	if v, ok := fc.env["NCCL_NET_PLUGIN"]; ok {
		want = nil
		for n := range strings.SplitSeq(v, ",") {
			n = strings.TrimSpace(n)
			if n == "" || strings.EqualFold(n, "none") {
				continue
			}
			want = append(want, n)
			if !strings.Contains(n, "/") && (!strings.HasPrefix(n, "lib") || !strings.HasSuffix(n, ".so")) {
				want = append(want, "libnccl-net-"+n+".so")
			}
		}
	}
	if len(want) == 0 {
		fc.add("plugin", matrix.Fail, "the image has %s, but NCCL loads no network plugin%s: unset NCCL_NET_PLUGIN, or set it to %s", paths(found), fc.via("NCCL_NET_PLUGIN"), cmp.Or(p.NetPlugin, path.Base(found[0].path)))
		return found[0]
	}
	dirs := fc.searchDirs()
	for _, n := range want {
		r, ok := fc.cl.find(n, dirs)
		if !ok || r == "" {
			continue
		}
		if o := fc.objs[r]; o != nil && slices.Contains(p.Files, path.Base(o.path)) {
			fc.add("plugin", matrix.Pass, "NCCL opens %s (%s) from /%s", n, p.Name, o.path)
			return o
		}
		fc.add("plugin", matrix.Fail, "NCCL opens %s from /%s, which is not %s's plugin (%s)%s", n, r, p.Name, paths(found), fc.via("NCCL_NET_PLUGIN"))
		return found[0]
	}
	hint := fmt.Sprintf("add %s to LD_LIBRARY_PATH", "/"+path.Dir(found[0].path))
	if base := path.Base(found[0].path); base != "libnccl-net.so" && p.NetPlugin != "" {
		hint = fmt.Sprintf("set NCCL_NET_PLUGIN=%s (NCCL opens libnccl-net.so otherwise) and add %s to LD_LIBRARY_PATH", p.NetPlugin, "/"+path.Dir(found[0].path))
	}
	fc.add("plugin", matrix.Fail, "the image has %s, but NCCL opens %s by name and finds none on the library search path (LD_LIBRARY_PATH, /etc/ld.so.conf.d, the default directories)%s, so it falls back to TCP sockets: %s", paths(found), strings.Join(want, " or "), fc.via("NCCL_NET_PLUGIN"), hint)
	return found[0]
}

// libs checks the fabric's libraries and the closure of the plugin and of
// them.
func (fc *fabricCheck) libs(plugin *elfObj) {
	dirs := fc.searchDirs()
	var missing, optional, have []string
	var check []*elfObj
	if plugin != nil {
		check = append(check, plugin)
	}
	for _, l := range fc.f.Libraries {
		r, ok := fc.cl.find(l.Soname, slices.Concat(dirs, relDirs(l.Dirs)))
		switch {
		case ok && r != "":
			have = append(have, fmt.Sprintf("%s (/%s)", l.Soname, r))
			if o := fc.objs[r]; o != nil && o != plugin {
				check = append(check, o)
			}
		case l.Optional:
			optional = append(optional, fmt.Sprintf("%s, %s: install %s", l.Soname, l.What, l.Install))
		default:
			missing = append(missing, fmt.Sprintf("%s, %s: install %s", l.Soname, l.What, l.Install))
		}
	}
	switch {
	case len(missing) > 0:
		fc.add("libs", matrix.Fail, "the image lacks %s", strings.Join(missing, "; "))
	case len(optional) > 0:
		fc.add("libs", matrix.Warn, "the image lacks %s (optional)", strings.Join(optional, "; "))
	case len(have) > 0:
		fc.add("libs", matrix.Pass, "has %s", strings.Join(have, ", "))
	}
	if len(check) == 0 {
		return
	}
	var unreadable []string
	var objs []*elfObj
	for _, o := range check {
		if o.err != "" {
			unreadable = append(unreadable, fmt.Sprintf("/%s: %s", o.path, o.err))
		} else if !o.dyn.static {
			objs = append(objs, o)
		}
	}
	sort.Slice(objs, func(i, j int) bool { return objs[i].path < objs[j].path })
	res := fc.cl.resolve(objs)
	if len(res.missing) > 0 {
		var msgs []string
		for _, m := range res.missing {
			msgs = append(msgs, fmt.Sprintf("/%s needs %s", m.path, strings.Join(m.names, ", ")))
		}
		fc.add("closure", matrix.Fail, "%s; a plugin that cannot load is skipped and NCCL falls back to TCP sockets: install what provides them, or put their directory on LD_LIBRARY_PATH or in /etc/ld.so.conf.d", strings.Join(msgs, "; "))
		return
	}
	if len(unreadable) > 0 {
		fc.add("closure", matrix.Warn, "could not read %s", strings.Join(unreadable, "; "))
		return
	}
	fc.add("closure", matrix.Pass, "%s find all %d of their needed libraries in the image (%d driver libraries left to the host)", paths(objs), res.found, res.driver)
}

// verbs checks that libibverbs will load the fabric's provider: a
// libibverbs.d/NAME.driver file anywhere (its IBV_CONFIG_DIR is the
// build's: /etc/libibverbs.d for distributions, under the installer's
// prefix for others) or NAME in RDMAV_DRIVERS/IBV_DRIVERS, and a
// lib<NAME>-rdmav<N>.so that resolves (rdma-core's dynamic_driver.c).
func (fc *fabricCheck) verbs() {
	name := fc.f.VerbsProvider
	var conf, modules []string
	for p := range fc.w.visible {
		switch base := path.Base(p); {
		case base == name+".driver" && path.Base(path.Dir(p)) == "libibverbs.d":
			conf = append(conf, "/"+p)
		case strings.HasPrefix(base, "lib"+name+"-rdmav") && strings.HasSuffix(base, ".so"):
			if r, ok := fc.cl.exists(p); ok {
				modules = append(modules, fmt.Sprintf("/%s (/%s)", p, r))
			}
		}
	}
	sort.Strings(conf)
	sort.Strings(modules)
	for _, k := range []string{"RDMAV_DRIVERS", "IBV_DRIVERS"} {
		if slices.Contains(strings.FieldsFunc(fc.c.env[k], func(r rune) bool { return r == ':' || r == ';' }), name) {
			conf = append(conf, k+" (image config ENV)")
		}
	}
	switch {
	case len(modules) == 0:
		fc.add("verbs", matrix.Fail, "no libibverbs provider module lib%s-rdmavN.so that resolves in the image, so libibverbs sees no %s device: install rdma-core's providers (ibverbs-providers, or the fabric's installer)", name, name)
	case len(conf) == 0:
		fc.add("verbs", matrix.Fail, "libibverbs loads only the providers a libibverbs.d/NAME.driver file names, and no %s.driver is in the image, so it sees no %s device: install rdma-core's providers with their configuration (ibverbs-providers' /etc/libibverbs.d/%s.driver), or set RDMAV_DRIVERS=%s", name, name, name, name)
	default:
		fc.add("verbs", matrix.Pass, "libibverbs loads its %s provider (%s; %s)", name, strings.Join(conf, ", "), strings.Join(modules, ", "))
	}
}

// provider checks that the libfabric the plugin loads has the provider.
func (fc *fabricCheck) provider(plugin *elfObj) {
	var lf string
	if plugin != nil {
		lf, _ = fc.cl.find("libfabric.so.1", fc.cl.dirs(plugin, nil))
	}
	if lf == "" {
		lf, _ = fc.cl.find("libfabric.so.1", fc.searchDirs())
	}
	o := fc.objs[lf]
	if lf == "" || o == nil || o.dyn == nil {
		fc.add("provider", matrix.Fail, "no readable libfabric.so.1 in the image, so there is no %s provider: install libfabric with %s (AWS's EFA installer puts it in /opt/amazon/efa/lib64)", fc.f.Provider, fc.f.Provider)
		return
	}
	module := path.Join(path.Dir(lf), "libfabric", "lib"+fc.f.Provider+"-fi.so")
	if r, ok := fc.cl.exists(module); ok {
		fc.add("provider", matrix.Pass, "libfabric /%s loads the %s provider as a module (/%s)", lf, fc.f.Provider, r)
		return
	}
	var linked []string
	for _, n := range fc.f.ProviderNeeds {
		if slices.Contains(o.dyn.needed, n) {
			linked = append(linked, n)
		}
	}
	if len(linked) == len(fc.f.ProviderNeeds) {
		fc.add("provider", matrix.Pass, "libfabric /%s has the %s provider built in (it links %s)", lf, fc.f.Provider, strings.Join(linked, ", "))
		return
	}
	fc.add("provider", matrix.Fail, "libfabric /%s has no %s provider: built in it would link %s, as a module it would be /%s; install a libfabric built with %s (AWS's EFA installer's, in /opt/amazon/efa)", lf, fc.f.Provider, strings.Join(fc.f.ProviderNeeds, ", "), module, fc.f.Provider)
}

// ncclLibs are the NCCL libraries of the image: system and wheel.
func (fc *fabricCheck) ncclLibs() (sys, pip []Library) {
	for _, l := range fc.c.r.Found.Libraries {
		if l.Family != "nccl" {
			continue
		}
		if l.Pip {
			pip = append(pip, l)
		} else if strings.Count(l.Version, ".") >= 2 {
			sys = append(sys, l)
		}
	}
	return sys, pip
}

func (fc *fabricCheck) pipNCCL() (name, version string) {
	for _, n := range []string{"nvidia-nccl-cu13", "nvidia-nccl-cu12", "nvidia-nccl-cu11"} {
		if v := fc.c.r.Found.Packages[n]; v != "" {
			return n, v
		}
	}
	return "", ""
}

// nccl checks the NCCL the framework loads against the plugin, and a
// second NCCL.
func (fc *fabricCheck) nccl() {
	sys, _ := fc.ncclLibs()
	wheel, wv := fc.pipNCCL()
	if fc.f.Host != nil {
		var inside []string
		if wheel != "" {
			inside = append(inside, fmt.Sprintf("%s %s (a wheel)", wheel, wv))
		}
		for _, l := range sys {
			inside = append(inside, fmt.Sprintf("NCCL %s (/%s)", l.Version, l.Path))
		}
		if len(inside) > 0 {
			fc.add("nccl/host", matrix.Warn, "the node installs its own NCCL with the plugin in %s, and that NCCL must be the one loaded; the image carries %s, which a framework may load instead (by RPATH, or ahead of LD_LIBRARY_PATH): run with NCCL_DEBUG=INFO and check that the NCCL version logged is the node's, or make %s come first (LD_LIBRARY_PATH, or LD_PRELOAD of its libnccl.so.2)", fc.f.Host.Dir, strings.Join(inside, ", "), fc.f.Host.Dir)
		} else {
			fc.add("nccl/host", matrix.Pass, "the image carries no NCCL of its own; the node's in %s is loaded", fc.f.Host.Dir)
		}
		return
	}
	loaded, what := wv, wheel+" "+wv
	if wheel == "" {
		for _, l := range sys {
			if newer(l.Version, loaded) {
				loaded, what = l.Version, fmt.Sprintf("NCCL %s (/%s)", l.Version, l.Path)
			}
		}
	}
	if loaded == "" {
		fc.add("nccl", matrix.Fail, "no NCCL in the image (no libnccl.so.2.X.Y, no nvidia-nccl wheel): install libnccl2 or the framework's NCCL wheel")
		return
	}
	if wheel != "" {
		for _, l := range sys {
			if baseVersion(l.Version) != baseVersion(wv) {
				fc.add("nccl/shadow", matrix.Warn, "the framework loads the wheel's NCCL (%s %s), not the system NCCL %s (/%s) installed beside the fabric stack: keep one NCCL, or make them the same release (pip install %s==%s, or the system package of %s)", wheel, wv, l.Version, l.Path, wheel, systemPin(l.Version), wv)
			}
		}
	}
	if fc.f.Plugin == nil {
		fc.add("nccl", matrix.Pass, "%s loads the fabric through NCCL's own transport", what)
		return
	}
	v, err := matrix.ParseVersion(baseVersion(loaded))
	if err != nil {
		fc.add("nccl", matrix.Warn, "cannot read the NCCL version %q of %s", loaded, what)
		return
	}
	oldest, tested := fc.f.Plugin.NCCLRange()
	rel := fc.f.Plugin.Releases[0]
	switch fc.f.Plugin.FitNCCL(v) {
	case matrix.NCCLTooOld:
		fc.add("nccl", matrix.Fail, "%s is older than every %s release supports (NCCL >= %s; %s %s is tested with NCCL %s): install NCCL >= %s", what, fc.f.Plugin.Name, oldest, fc.f.Plugin.Name, rel.Version, matrix.JoinVersions(rel.TestedNCCL), oldest)
	case matrix.NCCLUntested:
		fc.add("nccl", matrix.Warn, "%s is newer than any %s release was tested with (newest tested: NCCL %s); run the multi-node probe before relying on it", what, fc.f.Plugin.Name, tested)
	default:
		fc.add("nccl", matrix.Pass, "%s is within %s's range (NCCL >= %s; %s %s is tested with NCCL %s)", what, fc.f.Plugin.Name, oldest, fc.f.Plugin.Name, rel.Version, matrix.JoinVersions(rel.TestedNCCL))
	}
}

// systemPin turns a system NCCL's version into the wheel's (2.22.3).
func systemPin(v string) string {
	p, err := matrix.ParseVersion(v)
	if err != nil {
		return v
	}
	return p.Trunc(3).String()
}

// settings checks the environment and /etc/nccl.conf against the
// fabric's rules.
func (fc *fabricCheck) settings() {
	var bad, seen []string
	for _, e := range fc.f.Env {
		v, ok := fc.env[e.Name]
		if !ok {
			continue
		}
		if e.Disables(v) {
			bad = append(bad, fmt.Sprintf("%s=%s (%s) turns it off: %s; remove it there", e.Name, v, fc.from[e.Name], e.Why))
		} else {
			seen = append(seen, fmt.Sprintf("%s=%s", e.Name, v))
		}
	}
	if v, ok := fc.env["NCCL_SOCKET_IFNAME"]; ok {
		if loopbackOnly(v) {
			bad = append(bad, fmt.Sprintf("NCCL_SOCKET_IFNAME=%s (%s) lets NCCL use only the loopback interface, which reaches no other node: remove it, or exclude lo instead (NCCL_SOCKET_IFNAME=^lo)", v, fc.from["NCCL_SOCKET_IFNAME"]))
		} else {
			seen = append(seen, "NCCL_SOCKET_IFNAME="+v)
		}
	}
	switch {
	case len(bad) > 0:
		fc.add("env", matrix.Fail, "%s", strings.Join(bad, "; "))
	case len(seen) > 0:
		fc.add("env", matrix.Pass, "no setting turns it off (%s)", strings.Join(seen, ", "))
	default:
		fc.add("env", matrix.Pass, "no NCCL_NET, NCCL_NET_PLUGIN, FI_* or NCCL_SOCKET_IFNAME setting in the image config or /etc/nccl.conf turns it off")
	}
}

// host reminds what the node provides.
func (fc *fabricCheck) host() {
	h := fc.f.Host
	ld := fc.c.env["LD_LIBRARY_PATH"]
	if slices.Contains(strings.Split(ld, ":"), h.Dir) {
		fc.add("host", matrix.Pass, "LD_LIBRARY_PATH has %s, where the node's installer (%s) puts %s", h.Dir, h.Installer, strings.Join(h.Provides, " and "))
		return
	}
	fc.add("host", matrix.Warn, "the node's installer (%s) puts %s in %s, which the image's LD_LIBRARY_PATH (%q) does not name: set LD_LIBRARY_PATH=%s in the pod spec, as GKE's manifests do", h.Installer, strings.Join(h.Provides, " and "), h.Dir, ld, h.Dir)
}

// loopbackOnly says whether an NCCL_SOCKET_IFNAME value selects only
// the loopback interface (lo, =lo).
func loopbackOnly(v string) bool {
	v = strings.TrimSpace(v)
	if v == "" || strings.HasPrefix(v, "^") {
		return false
	}
	for p := range strings.SplitSeq(v, ",") {
		if p = strings.TrimPrefix(strings.TrimSpace(p), "="); p != "lo" {
			return false
		}
	}
	return true
}

func (fc *fabricCheck) via(key string) string {
	if v, ok := fc.env[key]; ok {
		return fmt.Sprintf(" (%s=%s, %s)", key, v, fc.from[key])
	}
	return ""
}

func (fc *fabricCheck) sortedObjs() []*elfObj {
	out := make([]*elfObj, 0, len(fc.objs))
	for _, o := range fc.objs {
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out
}

func paths(objs []*elfObj) string {
	s := make([]string, len(objs))
	for i, o := range objs {
		s[i] = "/" + o.path
	}
	return strings.Join(s, ", ")
}

func relDirs(ds []string) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = cleanRel(d)
	}
	return out
}

var reNCCLSetting = regexp.MustCompile(`^(NCCL_|FI_)[A-Z0-9_]+$`)

// ncclSettings are the NCCL_* and FI_* settings NCCL sees: the image
// config's environment, then /etc/nccl.conf for what the environment
// does not set (NCCL reads the file with setenv(name, value, 0): lines
// KEY=VALUE, # comments; src/misc/param.cc). from says where each was
// read.
func ncclSettings(env map[string]string, conf string) (map[string]string, map[string]string) {
	out, from := map[string]string{}, map[string]string{}
	for k, v := range env {
		if reNCCLSetting.MatchString(k) {
			out[k], from[k] = v, "image config ENV"
		}
	}
	for line := range strings.SplitSeq(conf, "\n") {
		line = strings.TrimRight(line, "\r")
		if strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || !reNCCLSetting.MatchString(k) {
			continue
		}
		if _, set := out[k]; !set {
			out[k], from[k] = v, "/etc/nccl.conf"
		}
	}
	return out, from
}
