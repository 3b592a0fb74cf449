package main

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpuimg/gpuimg/internal/testenv"
)

// scenario is what the node has (Have, pulled beforehand at full speed,
// not measured) and what it starts.
type scenario struct {
	Name  string
	Have  *variant
	Start variant
}

// result is one measured start.
type result struct {
	Link, Scenario, Kind string
	// Pull is the pull with its unpack (for eStargz: the lazy mount);
	// Run the start command; Took both: the time to ready.
	Pull, Run, Took time.Duration
	// Pulled is what went through the link, registry → node, until ready.
	Pulled int64
	// Fetches are the requests of the measured pull and start, times from
	// the start of the pull (Fetch.Sent is when the request reached the
	// registry).
	Fetches []Fetch `json:",omitempty"`
	// Unpacks are containerd's layer unpacks ("diff applied"), in order.
	Unpacks []unpack `json:",omitempty"`
	// Runs are the times to ready of every run of this measurement, in
	// the order run; the result is the run with the median time.
	Runs []time.Duration `json:",omitempty"`
}

// median is the run with the median time to ready (of an even number,
// the slower of the two middle ones), carrying every run's time.
func median(runs []result) result {
	if len(runs) == 0 {
		return result{}
	}
	sorted := slices.Clone(runs)
	slices.SortStableFunc(sorted, func(a, b result) int { return cmp.Compare(a.Took, b.Took) })
	m := sorted[len(sorted)/2]
	m.Runs = nil
	for _, r := range runs {
		m.Runs = append(m.Runs, r.Took)
	}
	return m
}

// unpack is one layer containerd applied: when it finished (from the
// start of the pull) and how long it took.
type unpack struct {
	Digest string        `json:"digest"`
	Size   int64         `json:"size"`
	Done   time.Duration `json:"done"`
	Took   time.Duration `json:"took"`
}

// timing sums up where a pull's time went: the last blob byte's arrival,
// the link's use until then, and the unpacks.
type timing struct {
	Blobs     int           // blob requests with a body
	LastByte  time.Duration // last blob byte at the node, from the start of the pull
	Busy      float64       // blob bytes / (link rate × LastByte)
	UnpackSum time.Duration // the unpacks, one after another
	AfterLast time.Duration // Pull − LastByte: what the node did after the last byte
}

func (r result) timing(rate float64) timing {
	var t timing
	var n int64
	for _, f := range r.Fetches {
		if !strings.Contains(f.Path, "/blobs/") || f.Bytes < 4096 {
			continue
		}
		t.Blobs++
		n += f.Bytes
		t.LastByte = max(t.LastByte, f.LastByte)
	}
	if t.LastByte > 0 {
		t.Busy = float64(n) / (rate * t.LastByte.Seconds())
	}
	for _, u := range r.Unpacks {
		t.UnpackSum += u.Took
	}
	if t.Blobs > 0 {
		t.AfterLast = r.Pull - t.LastByte
	}
	return t
}

// unpacks reads the "diff applied" lines containerd logged at debug level
// after offset off of its log, with times from t0.
func unpacks(logPath string, off int64, t0 time.Time) []unpack {
	b, err := os.ReadFile(logPath)
	if err != nil || int64(len(b)) < off {
		return nil
	}
	var out []unpack
	for line := range strings.SplitSeq(string(b[off:]), "\n") {
		if !strings.Contains(line, `msg="diff applied"`) {
			continue
		}
		u := unpack{}
		for _, kv := range logFields(line) {
			switch kv[0] {
			case "time":
				if at, err := time.Parse(time.RFC3339Nano, kv[1]); err == nil {
					u.Done = at.Sub(t0)
				}
			case "d":
				u.Took, _ = time.ParseDuration(kv[1])
			case "digest":
				u.Digest = kv[1]
			case "size":
				u.Size, _ = strconv.ParseInt(kv[1], 10, 64)
			}
		}
		out = append(out, u)
	}
	return out
}

// logFields splits a logrus text line into key=value pairs (values may
// be double-quoted).
func logFields(line string) [][2]string {
	var out [][2]string
	for line != "" {
		line = strings.TrimLeft(line, " ")
		k, rest, ok := strings.Cut(line, "=")
		if !ok {
			break
		}
		var v string
		if strings.HasPrefix(rest, `"`) {
			end := 1
			for end < len(rest) && (rest[end] != '"' || rest[end-1] == '\\') {
				end++
			}
			v = strings.ReplaceAll(rest[1:min(end, len(rest))], `\"`, `"`)
			rest = rest[min(end+1, len(rest)):]
		} else {
			v, rest, _ = strings.Cut(rest, " ")
		}
		out = append(out, [2]string{k, v})
		line = rest
	}
	return out
}

func execCommand(ctx context.Context, bin string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, bin, args...)
}

// measure starts a fresh node (containerd, and stargz-snapshotter for
// eStargz), gives it sc.Have at full speed, then measures sc.Start
// through the proxy: pull (with unpack) and the start command.
func measure(ctx context.Context, dir string, o options, host string, proxy *Proxy, k *kind, sc scenario) (res result, err error) {
	res = result{Scenario: sc.Name, Kind: k.Name}
	copts := testenv.ContainerdOptions{MaxConcurrentDownloads: o.downloads, MaxConcurrentUnpacks: o.unpacks, LogLevel: "debug"}
	var sg *testenv.Stargz
	if k.Snapshotter == "stargz" {
		if sg, err = testenv.StartStargz(ctx, filepath.Join(dir, "sg")); err != nil {
			return res, err
		}
		// Stopped after containerd (deferred first, runs last).
		defer sg.Stop()
		copts.ProxySnapshotters = map[string]string{"stargz": sg.Socket}
	}
	c, err := testenv.StartContainerd(ctx, filepath.Join(dir, "ctd"), copts)
	if err != nil {
		return res, err
	}
	defer c.Stop()
	if sc.Have != nil {
		if err := pull(ctx, c, sg, host+"/"+k.refs[sc.Have.Name], k); err != nil {
			return res, err
		}
	}
	ref := proxy.Addr() + "/" + k.refs[sc.Start.Name]
	var logOff int64
	if st, err := os.Stat(c.LogPath()); err == nil {
		logOff = st.Size()
	}
	b0 := proxy.Bytes()
	p0 := proxy.Since()
	t0 := time.Now()
	if err := pull(ctx, c, sg, ref, k); err != nil {
		return res, err
	}
	res.Pull = time.Since(t0)
	t1 := time.Now()
	out, err := c.Run(ctx, append([]string{"run", "--rm", "--snapshotter", k.Snapshotter, ref, "start"}, startCommand...)...)
	if err != nil {
		return res, err
	}
	res.Run = time.Since(t1)
	res.Took = time.Since(t0)
	res.Pulled = proxy.Bytes() - b0
	for _, f := range proxy.Fetches(p0) {
		f.Sent -= p0
		if f.Bytes > 0 {
			f.FirstByte -= p0
			f.LastByte -= p0
		}
		res.Fetches = append(res.Fetches, f)
	}
	res.Unpacks = unpacks(c.LogPath(), logOff, t0)
	if want := "ready " + torchVersion; !containsLine(string(out), want) {
		return res, fmt.Errorf("start command of %s printed %q, want a line starting %q", ref, out, want)
	}
	return res, nil
}

// pull pulls ref into c and unpacks it for k's snapshotter; eStargz is
// pulled lazily by the stargz helper.
func pull(ctx context.Context, c *testenv.Containerd, sg *testenv.Stargz, ref string, k *kind) error {
	if sg != nil {
		return sg.Pull(ctx, c, ref)
	}
	// Through the transfer service: its max_concurrent_downloads is in
	// containerd's configuration (o.downloads).
	_, err := c.Run(ctx, "images", "pull", "--plain-http", "--snapshotter", k.Snapshotter, ref)
	return err
}

func containsLine(out, prefix string) bool {
	for _, l := range splitLines(out) {
		if len(l) >= len(prefix) && l[:len(prefix)] == prefix {
			return true
		}
	}
	return false
}

func splitLines(s string) []string {
	var lines []string
	for len(s) > 0 {
		i := 0
		for i < len(s) && s[i] != '\n' {
			i++
		}
		lines = append(lines, s[:i])
		if i < len(s) {
			i++
		}
		s = s[i:]
	}
	return lines
}
