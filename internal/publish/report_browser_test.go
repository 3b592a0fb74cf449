package publish

import (
	"bytes"
	"context"
	"flag"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/gpuimg/gpuimg/internal/testenv"
)

var screenshotCopy = flag.String("report-screenshot", "", "also copy the browser test's screenshot of report.html to this file")

// chromiumPath finds Debian's chromium, installing it when missing.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	if err := testenv.EnsurePackages(t.Context(), "chromium"); err != nil {
		t.Fatalf("the browser check needs Debian's chromium: %v", err)
	}
	p, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium installed but not on PATH: %v", err)
	}
	return p
}

// TestReportInBrowser opens report.html in a real headless chromium, with
// every host name unresolvable (the page must need nothing from the
// network), and checks what the browser built: the DOM it dumps and the
// screenshot it takes.
func TestReportInBrowser(t *testing.T) {
	testenv.Require(t, "opens report.html in a headless chromium (installed with apt-get if missing)", testenv.Slow)
	bin := chromiumPath(t)
	dir := t.TempDir()
	r := reportFixture()
	prev := reportFixture()
	prev.Started = prev.Started.Add(-24 * time.Hour)
	prev.Results[0].Digest = "sha256:" + strings.Repeat("99", 32)
	prev.Results = prev.Results[:2]
	if err := WriteReports(dir, r, prev); err != nil {
		t.Fatal(err)
	}
	page := "file://" + filepath.Join(dir, ReportHTML)
	shot := filepath.Join(dir, "report.png")
	const width, height = 1280, 1600
	run := func(args ...string) []byte {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		defer cancel()
		base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
			"--no-default-browser-check", "--disable-dev-shm-usage", "--user-data-dir=" + filepath.Join(dir, "profile"),
			"--host-resolver-rules=MAP * ~NOTFOUND", "--window-size=1280,1600"}
		cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("chromium %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
		}
		return out
	}

	// The DOM, as the browser parsed it.
	dom, err := html.Parse(bytes.NewReader(run("--dump-dom", page)))
	if err != nil {
		t.Fatal(err)
	}
	summary := domFind(dom, func(n *html.Node) bool { return domAttr(n, "id") == "summary" })
	if summary == nil {
		t.Fatal("the DOM has no #summary")
	}
	if got, want := domText(summary), "3 variants: 1 published, 1 unchanged, 1 failed; 2 combinations skipped"; !strings.Contains(got, want) {
		t.Errorf("#summary says %q, want %q", got, want)
	}
	rows := domFindAll(dom, func(n *html.Node) bool { return n.Data == "tr" && domHasClass(n, "variant") })
	if len(rows) != len(r.Results) {
		t.Fatalf("%d variant rows, want %d", len(rows), len(r.Results))
	}
	names := map[string]bool{}
	for _, row := range rows {
		names[domAttr(row, "data-name")] = true
		if tbody := row.Parent; tbody == nil || tbody.Data != "tbody" || domFind(tbody.Parent, func(n *html.Node) bool { return n.Data == "thead" }) == nil {
			t.Errorf("variant row %s is not in the table's body", domAttr(row, "data-name"))
		}
	}
	for _, res := range r.Results {
		if !names[res.Variant.Name] {
			t.Errorf("no row for variant %s", res.Variant.Name)
		}
	}
	if first := domAttr(rows[0], "data-name"); first != "2.7.1-cu126-py3.11" || !domHasClass(rows[0], "failed") {
		t.Errorf("first row is %s, want the failed variant first", first)
	}
	failures := domFind(dom, func(n *html.Node) bool { return domAttr(n, "id") == "failures" })
	if failures == nil || !strings.Contains(domText(failures), "<script>alert(1)</script>") {
		t.Errorf("#failures does not show the error as text")
	}
	if s := domFind(dom, func(n *html.Node) bool { return n.Data == "script" }); s != nil {
		t.Errorf("the variant's error became a <script> element")
	}
	for _, id := range []string{"failures", "variants", "changes", "skipped", "details"} {
		if domFind(dom, func(n *html.Node) bool { return domAttr(n, "id") == id }) == nil {
			t.Errorf("the DOM has no #%s section", id)
		}
	}
	if ch := domFind(dom, func(n *html.Node) bool { return domAttr(n, "id") == "changes" }); ch != nil {
		if got := len(domFindAll(ch, func(n *html.Node) bool { return n.Data == "li" })); got != 2 {
			t.Errorf("#changes lists %d changes, want 2 (a new variant, a moved digest)", got)
		}
	}
	if got := len(domFindAll(dom, func(n *html.Node) bool { return n.Data == "tr" && domHasClass(n, "skip") })); got != len(r.Skipped) {
		t.Errorf("%d skipped rows, want %d", got, len(r.Skipped))
	}

	// A run with target imports: the browser shows each in #targets.
	tdir := filepath.Join(dir, "targets")
	if err := WriteReports(tdir, targetsFixture(), nil); err != nil {
		t.Fatal(err)
	}
	tdom, err := html.Parse(bytes.NewReader(run("--dump-dom", "file://"+filepath.Join(tdir, ReportHTML))))
	if err != nil {
		t.Fatal(err)
	}
	trs := domFindAll(tdom, func(n *html.Node) bool { return n.Data == "tr" && domHasClass(n, "target") })
	refused := 0
	for _, tr := range trs {
		if domHasClass(tr, "fail") {
			refused++
			if !strings.Contains(domText(tr), "over the 9.5 GB limit") {
				t.Errorf("the refused import's row does not say why: %q", domText(tr))
			}
		}
	}
	if len(trs) != 3 || refused != 1 {
		t.Errorf("#targets has %d rows (%d refused), want 3 (1)", len(trs), refused)
	}

	// The screenshot: the page's size, and drawn (many colours, the
	// failure summary's red background among them).
	run("--screenshot="+shot, page)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot %s: %v", shot, err)
	}
	if b := img.Bounds(); b.Dx() != width || b.Dy() != height {
		t.Errorf("screenshot is %dx%d, want %dx%d", b.Dx(), b.Dy(), width, height)
	}
	colours, badBG := countPNGColours(img, color.RGBA{0xff, 0xeb, 0xe9, 0xff})
	if colours < 50 {
		t.Errorf("screenshot has %d colours: nothing much was drawn", colours)
	}
	if badBG < 5000 {
		t.Errorf("screenshot has %d pixels of the failure background #ffebe9: the page's CSS did not apply", badBG)
	}
	t.Logf("screenshot: %s (%d colours)", shot, colours)
	if *screenshotCopy != "" {
		b, err := os.ReadFile(shot)
		if err == nil {
			err = os.WriteFile(*screenshotCopy, b, 0o644)
		}
		if err != nil {
			t.Error(err)
		}
	}
}

func countPNGColours(img image.Image, want color.RGBA) (distinct, matching int) {
	seen := map[color.RGBA]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			c := color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)
			seen[c] = true
			if c == want {
				matching++
			}
		}
	}
	return len(seen), matching
}

func domAttr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func domHasClass(n *html.Node, class string) bool {
	return n.Type == html.ElementNode && strings.Contains(" "+domAttr(n, "class")+" ", " "+class+" ")
}

func domFindAll(n *html.Node, match func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	for c := range n.Descendants() {
		if c.Type == html.ElementNode && match(c) {
			out = append(out, c)
		}
	}
	return out
}

func domFind(n *html.Node, match func(*html.Node) bool) *html.Node {
	if all := domFindAll(n, match); len(all) > 0 {
		return all[0]
	}
	return nil
}

func domText(n *html.Node) string {
	var b strings.Builder
	for c := range n.Descendants() {
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
		}
	}
	return strings.Join(strings.Fields(b.String()), " ")
}
