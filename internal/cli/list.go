package cli

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpuimg/gpuimg/matrix"
)

// listKinds are the tables `matrix list` shows, frameworks in matrix order.
func listKinds() []string {
	kinds := append([]string{"cuda", "archs", "cudnn", "nccl"}, matrix.FrameworkNames()...)
	return append(kinds, "gpus", "targets", "fabrics", "references", "links", "os", "images", "sources")
}

func newListCmd(mo *MatrixOptions) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "list " + strings.Join(listKinds(), "|"),
		Short: "List what the matrix knows, with the source of every row",
		Long: `list prints one kind of matrix row: CUDA releases with their driver floors,
GPU architectures, cuDNN and NCCL releases, PyTorch/TensorFlow/JAX releases
and their wheel variants, GPUs with their datasheet peaks, the fleets images
are imported into (targets: driver, GPUs, formats, limits; a trailing '?' marks
a fact no source confirmed), published performance references per GPU
(gpuimg probe --reference), the per-link bandwidth of NVLink generations and
PCIe generations (what NCCL's bus bandwidth and the host copies are judged
against), operating systems, NVIDIA base image tags, and the
public sources all of it was read from.`,
		Example: `  gpuimg matrix list cuda
  gpuimg matrix list torch -o json | jq '.[0]'
  gpuimg matrix list gpus
  gpuimg matrix list targets
  gpuimg matrix list targets -o json | jq '.[] | select(.name == "sagemaker/p5")'
  gpuimg matrix list links
  gpuimg matrix list sources`,
		Args: func(_ *cobra.Command, args []string) error {
			switch {
			case len(args) == 0:
				return invalid(errors.New("matrix list needs the kind of rows to list"), "use one of "+strings.Join(listKinds(), ", "))
			case len(args) > 1:
				return invalid(fmt.Errorf("matrix list takes one kind, got %d (%s)", len(args), strings.Join(args, " ")), "run it once per kind: "+strings.Join(listKinds(), ", "))
			case !slices.Contains(listKinds(), args[0]):
				return invalid(fmt.Errorf("unknown list %q", args[0]), "use one of "+strings.Join(listKinds(), ", "))
			}
			return nil
		},
		ValidArgs: listKinds(),
		PreRunE: func(cmd *cobra.Command, args []string) error {
			return checkFormat(cmd.Flags())
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			db, err := mo.Load()
			if err != nil {
				return err
			}
			return renderList(cmd.OutOrStdout(), output, args[0], db, screenWidth(cmd))
		},
	}
	outputFlag(cmd.Flags(), &output, "output", "text", "json", "wide")
	return cmd
}

func vs(v matrix.Version) string {
	if v.IsZero() {
		return "-"
	}
	return v.String()
}

func num(f float64) string {
	if f == 0 {
		return "-"
	}
	return fmt.Sprintf("%g", f)
}

// renderList writes the rows of kind, as a table fitted to width (0:
// unlimited) whose free-text columns (sources, titles) shrink first.
func renderList(w io.Writer, output, kind string, db *matrix.DB, width int) error {
	var rows any
	t := newTable(w, width)
	switch kind {
	case "cuda":
		rows = db.CUDA
		t.row("CUDA", "MIN DRIVER", "COMPAT DRIVER", "RELEASED", "ARCHS", "SOURCE")
		for _, r := range db.CUDA {
			floor, _ := db.DriverFloor(r.Version)
			compat, _ := db.CompatFloor(r.Version.Major())
			drv := vs(r.MinDriver)
			if r.MinDriver.IsZero() && !floor.IsZero() {
				drv = floor.String() + " (from an earlier patch)"
			}
			archs := db.ArchsFor(r.Version)
			span := "-"
			if len(archs) > 0 {
				span = archs[0] + ".." + archs[len(archs)-1]
			}
			t.row(r.Version.String(), drv, vs(compat), orDash(r.Released), span, r.Source)
		}
	case "archs":
		rows = db.Archs
		t.row("ARCH", "NAME", "ADDED IN", "REMOVED IN", "A FROM", "F FROM", "RENAMED TO", "DRIVERS", "SOURCE")
		for _, a := range db.Archs {
			t.row(a.Arch, a.Name, vs(a.AddedIn), vs(a.RemovedIn), vs(a.ArchSpecific), vs(a.FamilySpecific), orDash(a.RenamedTo), a.Driver.String(), a.Source)
		}
	case "cudnn", "nccl":
		libs := db.CuDNN
		if kind == "nccl" {
			libs = db.NCCL
		}
		rows = libs
		t.row(strings.ToUpper(kind), "CUDA", "MIN DRIVER", "GENCODE", "SOURCE")
		for _, l := range libs {
			gen := make([]string, len(l.Gencode))
			for i, g := range l.Gencode {
				gen[i] = g.String()
			}
			t.row(l.Version.String(), l.CUDA.String(), vs(l.MinDriver), orDash(strings.Join(gen, "; ")), l.Source)
		}
	case "torch":
		rows = db.Torch
		t.row("TORCH", "PYTHON", "VISION", "AUDIO", "VARIANT", "STATUS", "PYPI", "CUDNN", "NCCL", "PINS", "TRITON", "ARCHS", "SOURCE")
		for _, r := range db.Torch {
			for i, v := range r.Variants {
				ver, py, tv, ta, src := r.Version.String(), r.Python.String(), orDash(r.Torchvision), orDash(r.Torchaudio), r.Source
				if i > 0 {
					ver, py, tv, ta, src = "", "", "", "", ""
				}
				archs := strings.Join(v.Archs, ",")
				if len(v.PTX) > 0 {
					archs += " +PTX " + strings.Join(v.PTX, ",")
				}
				t.row(ver, py, tv, ta, "cu"+matrix.CUDATag(v.CUDA), v.Status, pypiCell(v.PyPI), vs(v.CuDNN), vs(v.NCCL), pinsCell(v.Pins), orDash(strings.TrimPrefix(v.Triton, "==")), orDash(archs), src)
			}
		}
	case "tensorflow":
		rows = db.TensorFlow
		t.row("TENSORFLOW", "PYTHON", "CUDA", "CUDNN", "NCCL", "PINS", "SOURCE")
		for _, r := range db.TensorFlow {
			t.row(r.Version.String(), r.Python.String(), r.CUDA.String(), r.CuDNN.String(), orDash(pinOf(r.Pins, "nvidia-nccl-")), pinsCell(r.Pins), r.Source)
		}
	case "jax":
		rows = db.JAX
		t.row("JAX", "PYTHON", "EXTRA", "MIN CUDA", "MIN CUDNN", "MIN DRIVER", "NCCL", "RANGES", "SOURCE")
		for _, r := range db.JAX {
			for i, v := range r.Variants {
				ver, py, src := r.Version.String(), r.Python.String(), r.Source
				if i > 0 {
					ver, py, src = "", "", ""
				}
				t.row(ver, py, v.Extra, vs(v.MinCUDA), vs(v.MinCuDNN), vs(v.MinDriver), orDash(rangeOf(v.Requires, "nvidia-nccl-")), countCell(len(v.Requires)), src)
			}
		}
	case "gpus":
		rows = db.GPUs
		t.Drop(11, 10, 7, 8, 6, 5, 3) // SOURCE, ALIASES, TF32, FP16, FP32, BANDWIDTH, FIRST LISTED
		t.row("GPU", "ARCH", "DRIVERS", "FIRST LISTED", "MEMORY GB", "BANDWIDTH GB/s", "FP32", "TF32", "FP16", "BF16 TFLOPS", "ALIASES", "SOURCE")
		for _, g := range db.GPUs {
			drv, _ := db.DriverSupportOf(g)
			t.row(g.Name, g.Arch, drv.String(), drv.ListedText(), num(g.MemoryGB), num(g.MemoryBandwidthGBs), num(g.FP32TFLOPS), num(g.TF32TFLOPS), num(g.FP16TFLOPS), num(g.BF16TFLOPS), strings.Join(g.Aliases, ","), g.Source)
		}
	case "targets":
		rows = targetsJSON(db.Targets)
		t.Drop(9, 8, 7, 5, 3) // SOURCE, RUNTIME, REGISTRY, COMPRESSIONS, PLATFORMS
		t.row("TARGET", "DRIVER", "GPUS", "PLATFORMS", "FORMATS", "COMPRESSIONS", "MAX SIZE", "REGISTRY", "RUNTIME", "SOURCE")
		for _, g := range db.Targets {
			t.row(targetRow(g)...)
		}
	case "fabrics":
		rows = db.Fabrics
		t.row("FABRIC", "PLUGIN", "NCCL", "LIBRARIES", "HOST PROVIDES", "SOURCE")
		for _, f := range db.Fabrics {
			t.row(fabricRow(f)...)
		}
	case "references":
		rows = db.References
		t.row("GPU", "FIGURE", "VALUE", "PRECISION", "BATCH", "SOFTWARE", "SOURCE")
		for _, r := range db.References {
			t.row(r.GPU, r.Figure, fmt.Sprintf("%g", r.Value), r.Precision, num(float64(r.Batch)), r.Software, r.Source)
		}
	case "links":
		rows = db.Links
		t.row("LINK", "VERSION", "ARCHS", "GB/s A LINK A DIRECTION", "GT/s A LANE", "ENCODING", "GB/s A LANE A DIRECTION", "SOURCE")
		for _, l := range db.Links {
			perLink, gts, enc, lane := "-", "-", "-", "-"
			if l.Link == "pcie" {
				gts, enc, lane = fmt.Sprintf("%g", l.GTs), l.Encoding, fmt.Sprintf("%.3f", l.LaneGBs())
			} else {
				perLink = fmt.Sprintf("%g", l.GBsPerLink)
			}
			archs := "any"
			if len(l.Archs) > 0 {
				archs = strings.Join(l.Archs, ",")
			}
			t.row(l.Link, strconv.Itoa(l.Version), archs, perLink, gts, enc, lane, l.Source)
		}
	case "os":
		rows = db.OS
		t.row("OS", "FAMILY", "PYTHONS (default first)", "EOL", "SOURCE")
		for _, o := range db.OS {
			py := make([]string, len(o.Pythons))
			for i, p := range o.Pythons {
				py[i] = p.String()
			}
			t.row(o.Name, o.Family, strings.Join(py, ", "), orDash(o.EOL), o.Source)
		}
	case "images":
		rows = db.BaseImages
		t.row("CUDA", "OS", "FLAVORS", "CUDNN", "NVIDIA", "SOURCE")
		for _, b := range db.BaseImages {
			support := "supported"
			if b.EOL {
				support = "end-of-life"
			}
			t.row(b.CUDA.String(), strings.Join(b.OS, ","), strings.Join(b.Flavors, ","), vs(b.CuDNN), support, b.Source)
		}
	case "sources":
		ids := make([]string, 0, len(db.Sources))
		for id := range db.Sources {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		list := make([]matrix.Source, len(ids))
		t.Shrink(1) // TITLE, then URL
		t.row("ID", "TITLE", "URL")
		for i, id := range ids {
			list[i] = db.Sources[id]
			t.row(id, list[i].Title, list[i].URL)
		}
		rows = list
	}
	if kind != "sources" {
		t.Drop(-1) // SOURCE: matrix list sources -o wide has them whole
	}
	t.Shrink(-1) // SOURCE (sources: URL)
	return render(w, output, rows, t.flush)
}

// fabricRow renders one fabric for the table: its plugin's newest
// release, the NCCL its releases accept, its libraries, the host's dir.
func fabricRow(f matrix.Fabric) []string {
	plugin, nccl, host := "-", "-", "-"
	if p := f.Plugin; p != nil {
		lo, tested := p.NCCLRange()
		plugin = fmt.Sprintf("%s %s (%s)", p.Name, p.Releases[0].Version, strings.Join(p.Files, ", "))
		nccl = fmt.Sprintf(">=%s, tested to %s", lo, tested)
	}
	libs := make([]string, len(f.Libraries))
	for i, l := range f.Libraries {
		libs[i] = l.Soname
		if l.Optional {
			libs[i] += "?"
		}
	}
	if f.Host != nil {
		host = f.Host.Dir
	}
	return []string{f.Name, plugin, nccl, orDash(strings.Join(libs, ",")), host, f.Source}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// targetRow renders one target for the table; a fact the row lists as
// unconfirmed gets a trailing '?'.
func targetRow(t matrix.Target) []string {
	mark := func(key, v string) string {
		if slices.Contains(t.Unconfirmed, key) {
			return v + "?"
		}
		return v
	}
	list := func(vs []string, empty string) string {
		if len(vs) == 0 {
			return empty
		}
		return strings.Join(vs, ",")
	}
	var formats []string
	for _, m := range t.MediaTypes {
		formats = append(formats, string(m))
	}
	format := mark("media_types", list(formats, "any"))
	if !t.Index {
		format += " " + mark("index", "single")
	} else if !t.Attestations {
		format += " " + mark("attestations", "no-attest")
	}
	var comps []string
	for _, c := range t.Compressions {
		comps = append(comps, string(c))
	}
	size := "-"
	if t.MaxSize > 0 {
		size = t.MaxSize.String() + " " + t.SizeOf
	}
	return []string{
		t.Name, mark("driver", vs(t.Driver)), mark("gpus", list(t.GPUs, "-")), mark("platforms", list(t.Platforms, "any")),
		format, mark("compressions", list(comps, "any")), mark("max_size", size), mark("registry", orDash(t.Registry)),
		mark("runtime", runtimeString(t.Runtime)), t.Source,
	}
}

// runtimeString renders a runtime contract: "serve :8080 /ping root".
func runtimeString(r *matrix.RuntimeContract) string {
	if r == nil {
		return "-"
	}
	var parts []string
	parts = append(parts, r.Args...)
	if r.Port != 0 {
		parts = append(parts, fmt.Sprintf(":%d", r.Port))
	}
	if r.Health != "" {
		parts = append(parts, r.Health)
	}
	if r.User != "" {
		parts = append(parts, r.User)
	}
	if r.UID != 0 {
		parts = append(parts, fmt.Sprintf("uid %d", r.UID))
	}
	return orDash(strings.Join(parts, " "))
}

// targetsJSON are the targets with empty lists as [] rather than null, so
// that jq and other readers can iterate every field.
func targetsJSON(ts []matrix.Target) []matrix.Target {
	out := slices.Clone(ts)
	for i := range out {
		t := &out[i]
		for _, l := range []*[]string{&t.GPUs, &t.Platforms, &t.Unconfirmed} {
			if *l == nil {
				*l = []string{}
			}
		}
		if t.MediaTypes == nil {
			t.MediaTypes = []matrix.ManifestFormat{}
		}
		if t.Compressions == nil {
			t.Compressions = []matrix.Compression{}
		}
	}
	return out
}

// pypiCell marks the variant plain "pip install torch" gets from PyPI.
func pypiCell(pypi bool) string {
	if pypi {
		return "default"
	}
	return "-"
}

// pinsCell says which exact pins a row records: how many, and the
// cuda-toolkit release where the wheel pins the metapackage (the CUDA 13
// shape) instead of each component; "-" when none were read.
func pinsCell(pins []matrix.Pin) string {
	for _, p := range pins {
		if p.Name == "cuda-toolkit" {
			return fmt.Sprintf("%d, cuda-toolkit %s", len(pins), p.Raw)
		}
	}
	return countCell(len(pins))
}

// countCell is n, or "-" for none.
func countCell(n int) string {
	if n == 0 {
		return "-"
	}
	return strconv.Itoa(n)
}

// pinOf is the version of the pin whose name starts with prefix.
func pinOf(pins []matrix.Pin, prefix string) string {
	for _, p := range pins {
		if strings.HasPrefix(p.Name, prefix) {
			return p.Raw
		}
	}
	return ""
}

// rangeOf is the specifiers of the range whose name starts with prefix.
func rangeOf(rs []matrix.WheelRange, prefix string) string {
	for _, r := range rs {
		if strings.HasPrefix(r.Name, prefix) {
			return r.Spec.String()
		}
	}
	return ""
}
