package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// report is what a run measured.
type report struct {
	Results      []result
	Kinds        []*kind
	Trace        *startTrace
	RuntimeExtra int64 // compressed bytes the runtime fixture adds to base
	RuntimeRaw   int64 // the same, uncompressed
	Base         baseSizes
	Wheels       []wheelSize
	Scale        float64
	Downloads    int
	Unpacks      int
	Runs         int // runs per measurement (the median is shown)
	Stargz       bool
	Plan         []string // the gpuimg Dockerfile of variant A
	Took         time.Duration
	// NoCompile says gpuimg's images were built with --torch-compile=false;
	// else NoCompileSize is variant A's compressed size built so, beside
	// the default.
	NoCompile     bool
	NoCompileSize int64
}

func mb(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/1e6) }

// find is the result of kind k in scenario sc on link l.
func (r *report) find(l, sc, k string) (result, bool) {
	for _, x := range r.Results {
		if x.Link == l && x.Scenario == sc && x.Kind == k {
			return x, true
		}
	}
	return result{}, false
}

func (r *report) ratio(sc, k string) float64 {
	g, ok1 := r.find(links[0].Name, sc, k)
	n, ok2 := r.find(links[0].Name, sc, "naive")
	if !ok1 || !ok2 || n.Took == 0 {
		return 0
	}
	return g.Took.Seconds() / n.Took.Seconds()
}

func (r *report) print(w io.Writer) {
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Fprintf(w, "startup benchmark: containerd 2 (ctr pull, overlayfs, max concurrent downloads %d, unpacks %d) on %d CPUs, load %s; fixture sizes = real / %g; each start measured %d times, the median shown; took %s\n",
		r.Downloads, r.Unpacks, runtime.NumCPU(), strings.Join(strings.Fields(string(load))[:3], " "), r.Scale, max(r.Runs, 1), r.Took.Round(time.Second))
	if !r.Stargz {
		fmt.Fprintln(w, "eStargz: not measured (stargz-snapshotter not running here)")
	}
	fmt.Fprint(w, "fixture wheels (real MB / scale → fixture wheel):")
	for _, x := range r.Wheels {
		fmt.Fprintf(w, " %s %.1f→%.1f MB;", x.Name, x.Target/1e6, float64(x.Size)/1e6)
	}
	fmt.Fprintln(w)
	var naive int64
	fmt.Fprintln(w, "image sizes, variant A, compressed layers:")
	for _, k := range r.Kinds {
		if k.Name == "naive" {
			naive = k.size
		}
		fmt.Fprintf(w, "  %-16s %10s  %.2f of naive\n", k.Name, mb(k.size), float64(k.size)/float64(naive))
	}
	for _, k := range r.Kinds {
		switch {
		case k.Name != "gpuimg":
		case r.NoCompile:
			fmt.Fprintln(w, "  (gpuimg's images without torch.compile's compiler and headers: --torch-compile=false)")
		case r.NoCompileSize > 0:
			fmt.Fprintf(w, "  (torch.compile's compiler and headers, real size, not scaled: %s of gpuimg's %s, %.0f%%; without them gpuimg is %s, %.2f of naive)\n",
				mb(k.size-r.NoCompileSize), mb(k.size), 100*float64(k.size-r.NoCompileSize)/float64(k.size), mb(r.NoCompileSize), float64(r.NoCompileSize)/float64(naive))
		}
	}
	fmt.Fprintf(w, "  (the runtime flavor adds %s to base in this fixture, %s uncompressed: Debian's CUDA 11.8 libraries for NVIDIA's %.1f GB / %g)\n",
		mb(r.RuntimeExtra), mb(r.RuntimeRaw), runtimeGB, r.Scale)
	if b := r.Base; b.Compressed > 0 {
		fmt.Fprintf(w, "  (the base, the same layer in every kind, is %s compressed, %s of files; %s of docs, translations and tests left out; not scaled: see docs/startup.md)\n",
			mb(b.Compressed), mb(b.Kept), mb(b.Dropped))
		var g, n *kind
		for _, k := range r.Kinds {
			switch k.Name {
			case "gpuimg":
				g = k
			case "naive":
				n = k
			}
		}
		if g != nil && n != nil && g.base > 0 && n.base > 0 {
			fmt.Fprintf(w, "  size without each image's base layer (gpuimg's %s, naive's %s): gpuimg %s / naive %s = %.2f\n", mb(g.base), mb(n.base),
				mb(g.size-g.base), mb(n.size-n.base), float64(g.size-g.base)/float64(n.size-n.base))
		}
	}
	if t := r.Trace; t != nil {
		fmt.Fprintf(w, "start trace of gpuimg A (strace around runc): %d image files opened, %s of files (%.1f%% of the image's %s uncompressed); %s read or mapped\n",
			len(t.Prioritized), mb(t.OpenedBytes), 100*float64(t.OpenedBytes)/float64(t.ImageBytes), mb(t.ImageBytes), mb(t.ReadBytes))
		fmt.Fprintf(w, "  bytes read at start / bytes pulled: %.3f (%s / %s; Slacker's figure); files opened / pulled: %.2f\n",
			float64(t.ReadBytes)/float64(t.Pulled), mb(t.ReadBytes), mb(t.Pulled), float64(t.OpenedBytes)/float64(t.Pulled))
	}
	fmt.Fprintln(w, "pull timing: blobs = blob requests with a body; last byte = the last blob byte at the node; busy = blob bytes / (link rate × last byte);")
	fmt.Fprintln(w, "  unpack Σ = containerd's layer unpacks (\"diff applied\"), one after another; after = pull − last byte (unpack and bookkeeping after the link went quiet)")
	fmt.Fprintf(w, "%-16s %-7s %-15s %8s %8s %8s %10s %9s | %5s %9s %5s %8s %8s | %s\n", "link", "scenario", "kind", "ready", "pull", "run", "pulled", "vs naive", "blobs", "last byte", "busy", "unpack Σ", "after", "every run's ready")
	for _, x := range r.Results {
		n, _ := r.find(x.Link, x.Scenario, "naive")
		rel := ""
		if n.Took > 0 {
			rel = fmt.Sprintf("%.2f", x.Took.Seconds()/n.Took.Seconds())
		}
		t := x.timing(linkRate(x.Link))
		var runs []string
		for _, d := range x.Runs {
			runs = append(runs, fmt.Sprintf("%.2f", d.Seconds()))
		}
		fmt.Fprintf(w, "%-16s %-7s %-15s %7.2fs %7.2fs %7.2fs %10s %9s | %5d %8.2fs %4.0f%% %7.2fs %7.2fs | %s\n", x.Link, x.Scenario, x.Kind, x.Took.Seconds(), x.Pull.Seconds(), x.Run.Seconds(), mb(x.Pulled), rel,
			t.Blobs, t.LastByte.Seconds(), 100*t.Busy, t.UnpackSum.Seconds(), t.AfterLast.Seconds(), strings.Join(runs, " "))
	}
	var gsize int64
	for _, k := range r.Kinds {
		if k.Name == "gpuimg" {
			gsize = k.size
		}
	}
	fmt.Fprintf(w, "startup: size %.2f, cold %s, switch %s, update %s (gpuimg/naive; lower is better)\n",
		float64(gsize)/float64(naive), r.ratioText("cold"), r.ratioText("switch"), r.ratioText("update"))
}

// ratioText is gpuimg's ratio to naive in scenario sc on the slow link,
// or "-" when the run did not measure it (-scenarios).
func (r *report) ratioText(sc string) string {
	if x := r.ratio(sc, "gpuimg"); x > 0 {
		return fmt.Sprintf("%.2f", x)
	}
	return "-"
}

// linkRate is the rate of the link named name (bytes per second).
func linkRate(name string) float64 {
	for _, l := range links {
		if l.Name == name {
			return l.Rate
		}
	}
	return 1
}

// save writes the report as JSON and the prefetch list into dir.
func (r *report) save(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	type k struct {
		Name string            `json:"name"`
		Size int64             `json:"size"`
		Base int64             `json:"base_layer"`
		Refs map[string]string `json:"refs"`
	}
	var ks []k
	for _, x := range r.Kinds {
		ks = append(ks, k{x.Name, x.size, x.base, x.refs})
	}
	b, err := json.MarshalIndent(map[string]any{"results": r.Results, "kinds": ks, "trace": r.Trace, "runtime_extra": r.RuntimeExtra, "runtime_extra_uncompressed": r.RuntimeRaw, "base": r.Base, "wheels": r.Wheels,
		"scale": r.Scale, "max_concurrent_downloads": r.Downloads, "max_concurrent_unpacks": r.Unpacks, "runs": r.Runs, "stargz": r.Stargz, "gpuimg_dockerfile": r.Plan, "took_ns": r.Took}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "report.json"), b, 0o644); err != nil {
		return err
	}
	if r.Trace != nil {
		return os.WriteFile(filepath.Join(dir, "prefetch.txt"), []byte(strings.Join(r.Trace.Prioritized, "\n")+"\n"), 0o644)
	}
	return nil
}

// wheelSize is a fixture wheel's size against its target.
type wheelSize struct {
	Name   string  `json:"name"`
	Target float64 `json:"target"` // real bytes / scale
	Size   int64   `json:"size"`
}

// wheelSizes lists the sized fixture wheels in dir (one per component and
// tag) with their targets.
func wheelSizes(dir string, scale float64) ([]wheelSize, error) {
	var out []wheelSize
	for _, c := range components {
		whls, _ := filepath.Glob(filepath.Join(dir, strings.ReplaceAll(c.Dist, "-", "_")+"-"+c.Version+"-*.whl"))
		for _, p := range whls {
			st, err := os.Stat(p)
			if err != nil {
				return nil, err
			}
			tag := strings.TrimSuffix(filepath.Base(p), ".whl")
			tag = strings.SplitN(strings.TrimPrefix(tag, strings.ReplaceAll(c.Dist, "-", "_")+"-"+c.Version+"-"), "-", 2)[0]
			out = append(out, wheelSize{Name: c.Dist + "(" + tag + ")", Target: c.RealMB * 1e6 / scale, Size: st.Size()})
		}
	}
	return out, nil
}
