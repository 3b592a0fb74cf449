package validate

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/gpuimg/gpuimg/matrix"
)

// target adds every check that follows from target t, each named
// target:NAME:WHAT with a message that names the target and the fix: how
// the image is wrapped (matrix's CheckPackaging, when p is known), its size
// (CheckSize), the host driver against the floors of the newest CUDA
// inside (strict, then minor-version compatibility), kernel coverage for
// every GPU of the fleet, and the runtime contract read from the config.
func (c *checker) target(t matrix.Target, cfg *v1.ConfigFile, p *matrix.Packaging) error {
	name := func(what string) string { return "target:" + t.Name + ":" + what }
	if p != nil {
		c.r.Checks = append(c.r.Checks, t.CheckPackaging(*p)...)
	}
	if f, ok := t.CheckSize(c.r.Size.Compressed, c.r.Size.Uncompressed); ok {
		c.r.Checks = append(c.r.Checks, f)
	}
	gpus := make([]matrix.GPU, len(t.GPUs))
	for i, gn := range t.GPUs {
		g, err := c.db.FindGPU(gn)
		if err != nil {
			return fmt.Errorf("target %s: %w", t.Name, err)
		}
		gpus[i] = g
	}
	underCompat := c.targetDriver(t, gpus, name("driver"))
	if len(gpus) == 0 && c.neededCUDA() != "" {
		// Unknown is never pass: say what was not checked and how to check it.
		// An image without CUDA inside has no kernels to check.
		c.r.Checks = append(c.r.Checks, Check{Name: name("gpu"), Status: matrix.UnknownFact,
			Message: fmt.Sprintf("%s: the target records no GPUs, so kernel coverage was not checked; give --gpu with your hosts' GPU (gpuimg validate IMAGE --target %s --gpu h100), or add gpus: to the row with --matrix-file", t.Name, t.Name)})
	}
	for _, g := range gpus {
		fs, err := c.gpuFindings(g, underCompat)
		if err != nil {
			return fmt.Errorf("target %s: %w", t.Name, err)
		}
		for _, f := range fs {
			f.Name = name(strings.Replace(f.Name, "gpu", "gpu/"+strings.ToLower(g.Name), 1))
			f.Message = t.Name + ": " + f.Message
			if f.Status == matrix.Fail {
				f.Message += fmt.Sprintf("; rebuild for the fleet's GPUs (gpuimg build --target %s)", t.Name)
			}
			c.r.Checks = append(c.r.Checks, f)
		}
	}
	c.targetRuntime(t, cfg, name)
	c.targetToolkit(t)
	return nil
}

// targetToolkit judges the NVIDIA Container Toolkit the fleet's hosts run
// (matrix.Target.ContainerToolkit) against the matrix's toolkit advisories
// (matrix.Advisory.HostToolkit), one target:NAME:container-toolkit/CVE
// check each whose range holds it: a warning that the hosts, not the
// image, must be upgraded, or a failure where the image sets the variable
// that triggers the flaw (an env row: on this fleet the image is the
// exploit). One pass when none does; nothing when the row records no
// toolkit.
func (c *checker) targetToolkit(t matrix.Target) {
	ct := t.ContainerToolkit
	if ct == nil || c.db == nil {
		return
	}
	unconfirmed := ""
	if slices.Contains(t.Unconfirmed, "container_toolkit") {
		unconfirmed = ", unconfirmed"
	}
	prefix := fmt.Sprintf("%s (NVIDIA Container Toolkit %s on the hosts, %s read %s%s)", t.Name, ct.Version, ct.Source, ct.Retrieved, unconfirmed)
	name := "target:" + t.Name + ":container-toolkit"
	var newest matrix.Version
	affected := 0
	for _, a := range c.db.Advisories {
		if !a.HostToolkit() {
			continue
		}
		if newest.IsZero() || a.Fixed.Compare(newest) > 0 {
			newest = a.Fixed
		}
		if !a.AffectsToolkit(ct.Version) {
			continue
		}
		affected++
		ids := strings.Join(a.CVEs(), ", ")
		if v, ok := c.env[a.Env]; ok && a.Kind == matrix.AdvisoryEnv {
			c.add(name+"/"+a.ID, matrix.Fail, "%s: the image config sets %s=%s, which triggers %s (%s, CVSS %.1f) on this toolkit (fixed in %s): %s; remove %s from the image config (set it in the entrypoint), and have the hosts' toolkit upgraded to %s or later", prefix, a.Env, truncate(v, 120), ids, a.Severity, a.CVSS, a.Fixed, a.Summary, a.Env, a.Fixed)
			continue
		}
		c.add(name+"/"+a.ID, matrix.Warn, "%s: the hosts' toolkit is affected by %s (%s, CVSS %.1f): %s; the hosts, not the image, must be upgraded to toolkit %s or later (no rebuild of the image fixes it)", prefix, ids, a.Severity, a.CVSS, a.Summary, a.Fixed)
	}
	switch {
	case affected > 0:
	case newest.IsZero():
		c.add(name, matrix.Pass, "%s: the matrix has no toolkit advisories to judge it by", prefix)
	default:
		c.add(name, matrix.Pass, "%s: no toolkit advisory of the matrix affects it (the newest fix is %s)", prefix, newest)
	}
}

// targetDriver judges the fleet's host driver against the floors of what
// is inside (checker.floors, matrix.DriverFloors.Judge, as --driver), and whether the NVIDIA
// container runtime starts the image on it with the fleet's GPUs
// (matrix.DB.JudgeRuntime, the rule validate --driver and matrix check
// use). It says whether the image runs only under compatibility.
func (c *checker) targetDriver(t matrix.Target, gpus []matrix.GPU, name string) (underCompat bool) {
	unconfirmed := ""
	if slices.Contains(t.Unconfirmed, "driver") {
		unconfirmed = ", unconfirmed"
	}
	prefix := fmt.Sprintf("%s (host driver %s%s): ", t.Name, t.Driver, unconfirmed)
	if t.Driver.IsZero() && c.neededCUDA() == "" {
		c.add(name, matrix.Pass, "%s: no CUDA inside; any driver loads it", t.Name)
		return false
	}
	if t.Driver.IsZero() {
		c.add(name, matrix.UnknownFact, "%s: the target row gives no host driver, so the driver floor was not checked; give --driver with your hosts' driver (nvidia-smi --query-gpu=driver_version), or add driver: to the row with --matrix-file", t.Name)
		return false
	}
	if c.neededCUDA() == "" {
		c.add(name, matrix.Pass, "%sno CUDA inside; any driver loads it", prefix)
	} else {
		floors := c.floors()
		f := floors.Judge(name, t.Driver)
		f.Message = prefix + f.Message
		if f.Status == matrix.Fail {
			f.Message += fmt.Sprintf(", or gpuimg matrix resolve --target %s", t.Name)
		}
		c.r.Checks = append(c.r.Checks, f)
		underCompat = floors.Fit(t.Driver) == matrix.DriverCompatOnly
	}
	rf := c.db.JudgeRuntime(name+"/require-cuda", c.env, t.Driver, gpus)
	rf.Message = prefix + rf.Message
	c.r.Checks = append(c.r.Checks, rf)
	for _, g := range gpus {
		if gf, ok := c.db.JudgeGPUDriver(name+"/"+strings.ToLower(g.Name), g, t.Driver); ok {
			gf.Message = prefix + gf.Message
			c.r.Checks = append(c.r.Checks, gf)
		}
	}
	return underCompat
}

// targetRuntime checks the runtime contract statically: the image has
// something to start, in exec form when the platform passes arguments
// (SageMaker's serve/train), EXPOSEs the port the platform calls, and
// runs as the user the platform expects.
func (c *checker) targetRuntime(t matrix.Target, cfg *v1.ConfigFile, name func(string) string) {
	rc := t.Runtime
	if rc == nil {
		return
	}
	ep, cmd := cfg.Config.Entrypoint, cfg.Config.Cmd
	args := strings.Join(rc.Args, ", ")
	switch {
	case len(rc.Args) > 0 && len(ep) == 0:
		c.add(name("entrypoint"), matrix.Fail, "%s: the image has no ENTRYPOINT; the platform starts it as `docker run IMAGE %s`, so the argument replaces CMD and runs as the program: add an exec-form ENTRYPOINT [\"/path/to/server\"] that takes %s", t.Name, rc.Args[0], args)
	case len(rc.Args) > 0 && shellForm(ep):
		c.add(name("entrypoint"), matrix.Fail, "%s: ENTRYPOINT %q is in shell form, which drops the argument the platform passes (%s) and keeps the server from receiving SIGTERM: write it in exec form, ENTRYPOINT [\"/path/to/server\"]", t.Name, strings.Join(ep, " "), args)
	case len(rc.Args) > 0:
		c.add(name("entrypoint"), matrix.Pass, "%s: exec-form ENTRYPOINT %q takes the platform's argument %s", t.Name, strings.Join(ep, " "), args)
	case len(ep) == 0 && len(cmd) == 0:
		c.add(name("entrypoint"), matrix.Fail, "%s: the image has neither ENTRYPOINT nor CMD, so the platform has nothing to start: add an exec-form ENTRYPOINT or CMD", t.Name)
	case shellForm(ep) || (len(ep) == 0 && shellForm(cmd)):
		c.add(name("entrypoint"), matrix.Warn, "%s: the start command is in shell form (sh -c), so the shell, not the server, gets SIGTERM when the platform stops the container: write it in exec form", t.Name)
	default:
		c.add(name("entrypoint"), matrix.Pass, "%s: starts %q", t.Name, strings.Join(append(slices.Clone(ep), cmd...), " "))
	}
	if rc.Port > 0 {
		health := ""
		if rc.Health != "" {
			health = ", health route " + rc.Health
		}
		port := fmt.Sprintf("%d/tcp", rc.Port)
		exposed := make([]string, 0, len(cfg.Config.ExposedPorts))
		for p := range cfg.Config.ExposedPorts {
			exposed = append(exposed, p)
		}
		slices.Sort(exposed)
		switch {
		case slices.Contains(exposed, port):
			c.add(name("port"), matrix.Pass, "%s: EXPOSE %d, the port the platform calls%s", t.Name, rc.Port, health)
		case len(exposed) == 0:
			c.add(name("port"), matrix.Warn, "%s: the image EXPOSEs no port; the platform calls %d%s: listen on 0.0.0.0:%d and add EXPOSE %d", t.Name, rc.Port, health, rc.Port, rc.Port)
		default:
			c.add(name("port"), matrix.Fail, "%s: the image EXPOSEs %s, not %d, the port the platform calls%s: serve on 0.0.0.0:%d (EXPOSE %d)", t.Name, strings.Join(exposed, ", "), rc.Port, health, rc.Port, rc.Port)
		}
	}
	user := cfg.Config.User
	isRoot := user == "" || user == "root" || user == "0" || strings.HasPrefix(user, "0:") || strings.HasPrefix(user, "root:")
	switch rc.User {
	case "root":
		if isRoot {
			c.add(name("user"), matrix.Pass, "%s: runs as root, as the platform expects", t.Name)
		} else {
			c.add(name("user"), matrix.Warn, "%s: the image sets USER %s; the platform runs containers as root, so files the image made for that user may be unreadable or unwritable there", t.Name, user)
		}
	case "non-root":
		uid, _, _ := strings.Cut(user, ":")
		fix := "USER 1000 (a numeric UID, which Kubernetes' runAsNonRoot can verify)"
		if rc.UID != 0 {
			fix = fmt.Sprintf("USER %d (the UID the platform requires)", rc.UID)
		}
		switch {
		case isRoot:
			c.add(name("user"), matrix.Fail, "%s: the image runs as root (no USER, or USER %q); the platform refuses root containers: add %s", t.Name, user, fix)
		case !isNumericUser(user) && rc.UID != 0:
			c.add(name("user"), matrix.Warn, "%s: USER %s is a name; the platform requires UID %d, which gpuimg cannot read from a name: write USER %d", t.Name, user, rc.UID, rc.UID)
		case !isNumericUser(user):
			c.add(name("user"), matrix.Warn, "%s: USER %s is a name; Kubernetes' runAsNonRoot can verify only a numeric UID: write USER %s as its UID", t.Name, user, user)
		case rc.UID != 0 && uid != strconv.Itoa(rc.UID):
			c.add(name("user"), matrix.Fail, "%s: the image runs as USER %s; the platform requires UID %d: write USER %d and give that user the files it writes", t.Name, user, rc.UID, rc.UID)
		default:
			c.add(name("user"), matrix.Pass, "%s: runs as USER %s, not root", t.Name, user)
		}
	}
}

// shellForm says whether an ENTRYPOINT or CMD is Docker's shell form
// (what `ENTRYPOINT prog args` becomes: /bin/sh -c "prog args").
func shellForm(argv []string) bool {
	if len(argv) < 2 || argv[1] != "-c" {
		return false
	}
	switch argv[0] {
	case "/bin/sh", "sh", "/bin/bash", "bash", "/usr/bin/sh", "/usr/bin/bash", "cmd", "cmd /S /C":
		return true
	}
	return false
}

func isNumericUser(u string) bool {
	uid, _, _ := strings.Cut(u, ":")
	if uid == "" {
		return false
	}
	for _, r := range uid {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// targetFabric says which fabric the target's fleet uses, as a
// target:NAME:fabric finding: the row's fabric, whose checks (fabric:…)
// then run, or a warning that the row records none.
func (c *checker) targetFabric(t matrix.Target) (matrix.Fabric, bool, error) {
	name := "target:" + t.Name + ":fabric"
	if t.Fabric == "" {
		c.add(name, matrix.Warn, "%s: the target row names no fabric (no source read says which multi-node network its hosts give containers), so the fabric checks do not run for it: pass --fabric (efa, infiniband, tcpxo, gib) for a multi-node job", t.Name)
		return matrix.Fabric{}, false, nil
	}
	f, err := c.db.Fabric(t.Fabric)
	if err != nil {
		return matrix.Fabric{}, false, fmt.Errorf("target %s: %w", t.Name, err)
	}
	unconfirmed := ""
	if slices.Contains(t.Unconfirmed, "fabric") {
		unconfirmed = " (unconfirmed)"
	}
	c.add(name, matrix.Pass, "%s: the fleet's fabric is %s%s, %s: see the fabric:%s checks", t.Name, f.Name, unconfirmed, f.Title, f.Name)
	return f, true, nil
}

// labelFabric is the fabric the dev.gpuimg.stack label says the build
// added (gpuimg build --fabric): the image is checked for it as for
// --fabric.
func (c *checker) labelFabric() (matrix.Fabric, bool) {
	s := c.stack
	if !c.hasStack || c.stackErr != nil || s.Fabric == nil || c.db == nil {
		return matrix.Fabric{}, false
	}
	f, err := c.db.Fabric(s.Fabric.Name)
	if err != nil {
		c.add("stack-label/fabric", matrix.Warn, "the %s label names fabric %s, which the matrix does not know (%v), so the fabric checks do not run for it", matrix.StackLabel, s.Fabric.Name, err)
		return matrix.Fabric{}, false
	}
	c.add("stack-label/fabric", matrix.Pass, "the %s label says the build added fabric %s: see the fabric:%s checks", matrix.StackLabel, f.Name, f.Name)
	return f, true
}

// TargetCheck is the check images.Import runs before it pushes: the whole
// static validation of the image with target t (its packaging as it will
// be after the conversion), every check that gpuimg validate --target
// runs, not only the target's own (secrets, unsafe paths, the stack label,
// NVIDIA_REQUIRE_CUDA, …): a failed one refuses the push. opt gives the
// matrix and the report's name; its Targets and Packaging are replaced.
func TargetCheck(t matrix.Target, opt Options) func(ctx context.Context, img v1.Image, after matrix.Packaging) ([]matrix.Finding, error) {
	return func(ctx context.Context, img v1.Image, after matrix.Packaging) ([]matrix.Finding, error) {
		o := opt
		o.Targets, o.Packaging = []matrix.Target{t}, &after
		rep, err := Inspect(ctx, img, o)
		if err != nil {
			return nil, err
		}
		return rep.Checks, nil
	}
}

// TargetChecks are the checks a target added (named target:NAME:WHAT).
func TargetChecks(cs []Check) []Check {
	var out []Check
	for _, c := range cs {
		if strings.HasPrefix(c.Name, "target:") {
			out = append(out, c)
		}
	}
	return out
}

// NewFabricChecks are the fabric checks (named fabric:NAME:WHAT) of cs
// whose fabric have has none of: a target of another platform group
// brings its fleet's fabric into that group's report only.
func NewFabricChecks(have, cs []Check) []Check {
	fabricOf := func(n string) string {
		rest, ok := strings.CutPrefix(n, "fabric:")
		if !ok {
			return ""
		}
		f, _, _ := strings.Cut(rest, ":")
		return f
	}
	seen := map[string]bool{}
	for _, c := range have {
		if f := fabricOf(c.Name); f != "" {
			seen[f] = true
		}
	}
	var out []Check
	for _, c := range cs {
		if f := fabricOf(c.Name); f != "" && !seen[f] {
			out = append(out, c)
		}
	}
	return out
}
