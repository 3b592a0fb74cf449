package cli

import (
	"bufio"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Docs are tests: every `gpuimg …` command shown in a fenced block of
// README.md, docs/*.md and examples/*.md runs here, unless a rule below
// says why it cannot run offline (a GPU, the internet, a daemon this test
// does not start, or a file the doc does not give). The reasons are
// logged, so `go test -v -run TestDocsCommands` lists what is skipped.
//
// A command runs in a scratch directory holding a copy of examples/ (so
// `-f publish.yaml` and `-f gpuimg.yaml` mean the shipped examples) and
// the files earlier commands of the same doc wrote with `> FILE`.
// Annotations in an HTML comment on the line before a fence:
//
//	<!-- doctest: exit N[,N…] -->   the block's commands exit N, in order (the last N
//	                                 holds for the rest; default 0)
//	<!-- doctest: skip REASON -->   the block is not run, with the reason
//	<!-- doctest: file NAME -->     the (yaml) block is written to NAME for later commands
//
// `export NAME=VALUE` (a plain VALUE) sets NAME for the later commands of
// its block.
//
// In a ```console block the lines after `$ gpuimg …` are the output the
// doc shows: they must appear in stdout+stderr in that order, contiguous,
// with a line `...` (or `…`) standing for any number of lines. Without
// an elision line the output must match whole.

// docFiles are the documents whose commands run.
func docFiles(t *testing.T, root string) []string {
	t.Helper()
	files := []string{filepath.Join(root, "README.md")}
	for _, pat := range []string{"docs/*.md", "examples/*.md"} {
		m, err := filepath.Glob(filepath.Join(root, pat))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	return files
}

// docCommand is one `gpuimg …` line of a doc.
type docCommand struct {
	file, line string
	lineNo     int
	args       []string
	redirect   string   // `> FILE`: stdout goes there
	shown      []string // the output a console block shows; nil: none shown
	console    bool
	exit       int
	skip       string            // why the block does not run
	env        map[string]string // `export NAME=VALUE` lines before it in its block
}

// docExport is a block's `export NAME=VALUE` line with a plain value.
var docExport = regexp.MustCompile(`^export ([A-Z_][A-Z0-9_]*)=([A-Za-z0-9._/:-]*)$`)

func (c docCommand) String() string { return fmt.Sprintf("%s:%d: %s", c.file, c.lineNo, c.line) }

var docAnnotation = regexp.MustCompile(`^<!--\s*doctest:\s*(exit|skip|file)\s*(.*?)\s*-->$`)

// parseDoc returns the commands of one markdown file and the files its
// `doctest: file` blocks give.
func parseDoc(t *testing.T, path, rel string) ([]docCommand, map[string]string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var (
		cmds         []docCommand
		files        = map[string]string{}
		lines        = strings.Split(string(b), "\n")
		annot        = map[string]string{}
		inBlock      bool
		info         string
		blockLines   []string
		blockStartNo int
	)
	for i, l := range lines {
		trimmed := strings.TrimSpace(l)
		if rest, fence := strings.CutPrefix(trimmed, "```"); fence {
			if !inBlock {
				inBlock, info, blockLines, blockStartNo = true, rest, nil, i+2
				continue
			}
			inBlock = false
			if name, ok := annot["file"]; ok {
				files[name] = strings.Join(blockLines, "\n") + "\n"
			}
			cmds = append(cmds, blockCommands(rel, info, blockLines, blockStartNo, annot)...)
			annot = map[string]string{}
			continue
		}
		if inBlock {
			blockLines = append(blockLines, l)
			continue
		}
		if m := docAnnotation.FindStringSubmatch(trimmed); m != nil {
			annot[m[1]] = m[2]
		} else if trimmed != "" {
			annot = map[string]string{}
		}
	}
	return cmds, files
}

// blockCommands splits one fenced block into its gpuimg commands.
func blockCommands(rel, info string, lines []string, firstNo int, annot map[string]string) []docCommand {
	console := info == "console"
	for _, l := range lines {
		console = console || strings.HasPrefix(l, "$ gpuimg ")
	}
	var exits []int
	for v := range strings.SplitSeq(annot["exit"], ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
			exits = append(exits, n)
		}
	}
	var out []docCommand
	env := map[string]string{}
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if console {
			if !strings.HasPrefix(l, "$ ") {
				continue
			}
			l = strings.TrimPrefix(l, "$ ")
		}
		no := firstNo + i
		for strings.HasSuffix(strings.TrimSpace(stripComment(l)), `\`) && i+1 < len(lines) {
			l = strings.TrimSuffix(strings.TrimSpace(stripComment(l)), `\`) + " " + strings.TrimSpace(lines[i+1])
			i++
		}
		l = strings.TrimSpace(stripComment(l))
		if m := docExport.FindStringSubmatch(l); m != nil {
			env[m[1]] = m[2]
			continue
		}
		if !strings.HasPrefix(l, "gpuimg ") {
			continue
		}
		c := docCommand{file: rel, line: l, lineNo: no, console: console, skip: annot["skip"], env: maps.Clone(env)}
		switch n := len(out); {
		case n < len(exits):
			c.exit = exits[n]
		case len(exits) > 0:
			c.exit = exits[len(exits)-1]
		}
		if console {
			c.shown = []string{}
			for i+1 < len(lines) && !strings.HasPrefix(lines[i+1], "$ ") {
				c.shown = append(c.shown, lines[i+1])
				i++
			}
		}
		out = append(out, c)
	}
	return out
}

// stripComment drops a shell comment (` # …` outside quotes).
func stripComment(l string) string {
	var q rune
	for i, r := range l {
		switch {
		case q != 0:
			if r == q {
				q = 0
			}
		case r == '\'' || r == '"':
			q = r
		case r == '#' && (i == 0 || l[i-1] == ' '):
			return l[:i]
		}
	}
	return l
}

// splitWords splits a command line as a POSIX shell would for the simple
// commands docs show: words, single and double quotes, and one `> FILE`.
// ok is false for what this test does not run: pipes, substitutions,
// globs, `&&`, variables.
func splitWords(l string) (words []string, redirect string, ok bool) {
	var (
		cur    strings.Builder
		inWord bool
		q      rune
	)
	flush := func() {
		if inWord {
			words = append(words, cur.String())
		}
		cur.Reset()
		inWord = false
	}
	for _, r := range l {
		switch {
		case q != 0:
			switch {
			case r == q:
				q = 0
			case q == '"' && (r == '$' || r == '`'):
				return nil, "", false
			default:
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			q, inWord = r, true
		case r == ' ' || r == '\t':
			flush()
		case strings.ContainsRune("|&;$`*<(){}", r):
			return nil, "", false
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	flush()
	if q != 0 {
		return nil, "", false
	}
	for i, w := range words {
		if w == ">" {
			if i != len(words)-2 {
				return nil, "", false
			}
			return words[:i], words[i+1], true
		}
		if strings.HasPrefix(w, ">") || strings.Contains(w, "2>") {
			return nil, "", false
		}
	}
	return words, "", true
}

// offlineRule is one reason a documented command cannot run here.
type offlineRule struct {
	match  *regexp.Regexp
	reason string
}

// offlineRules are checked in order against the command line; the first
// match skips it. Each names what the command needs that `make test`
// does not give it.
var offlineRules = []offlineRule{
	{regexp.MustCompile(` \[[A-Za-z-]`), "a synopsis ([optional] parts), not a command"},
	{regexp.MustCompile(`\b(IMAGE|REF|SRC|PORT)\b|…|<[a-z-]+>`), "needs a placeholder the reader fills in"},
	{regexp.MustCompile(`\.example\.com|\.amazonaws\.com|docker\.io/|\.pkg\.dev|aliyuncs\.com|myhuaweicloud\.com|tcp://|awskms://`), "needs a registry, builder or KMS on the internet"},
	{regexp.MustCompile(`^gpuimg probe( |$)(?:-|$)`), "needs a GPU"},

	{regexp.MustCompile(`^gpuimg matrix update`), "needs upstream indexes on the internet (PyPI, download.pytorch.org, GitHub)"},
	{regexp.MustCompile(`^gpuimg build .*--dockerfile-only`), "needs the base image's registry (it pins the base by digest; builder tests run this)"},
	{regexp.MustCompile(`^gpuimg (build|publish)\b`), "needs a BuildKit daemon and a registry (internal/e2e and builder tests run these)"},
	{regexp.MustCompile(`--run (docker|podman)`), "needs a GPU container runtime"},
}

// docInputArg is an argument that names an input file.
var docInputArg = regexp.MustCompile(`^(?:[a-z-]+-archive:|oci:)?([^=:]+\.(?:json|yaml|yml|tar|log|pub|key))$`)

// skipReason says why c cannot run in dir, or "".
func skipReason(c docCommand, dir string) string {
	if c.skip != "" {
		return c.skip
	}
	for _, r := range offlineRules {
		if r.match.MatchString(c.line) {
			return r.reason
		}
	}
	if c.args == nil {
		return "needs a shell (pipes, substitutions, globs or variables)"
	}
	for i, a := range c.args {
		if i > 0 && (c.args[i-1] == "--file" || c.args[i-1] == "--save-baseline") {
			continue // an output
		}
		if root, ok := strings.CutPrefix(a, "dir:"); ok {
			if _, err := os.Stat(filepath.Join(dir, root)); err != nil {
				return "needs " + root + ", a root file system of the reader's"
			}
			continue
		}
		m := docInputArg.FindStringSubmatch(a)
		if m == nil {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, m[1])); err != nil {
			return "needs " + m[1] + ", a file of the reader's that the doc does not give"
		}
	}
	return ""
}

// TestDocsCommands runs the documented commands.
func TestDocsCommands(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, path := range docFiles(t, root) {
		rel, _ := filepath.Rel(root, path)
		cmds, files := parseDoc(t, path, rel)
		if len(cmds) == 0 {
			continue
		}
		dir := docScratch(t, root, files)
		for _, c := range cmds {
			c.args, c.redirect, _ = splitWords(c.line)
			if why := skipReason(c, dir); why != "" {
				t.Logf("skip %s\n\t%s", c, why)
				continue
			}
			ran++
			t.Run(fmt.Sprintf("%s:%d", rel, c.lineNo), func(t *testing.T) { runDocCommand(t, c, dir) })
		}
	}
	if ran < 10 {
		t.Errorf("only %d documented commands ran: the parser or the skip rules are broken", ran)
	}
}

// docScratch is a directory with a copy of examples/ and the doc's files.
func docScratch(t *testing.T, root string, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	ex, err := os.ReadDir(filepath.Join(root, "examples"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ex {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, "examples", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// runDocCommand runs c in dir and compares what the doc shows.
func runDocCommand(t *testing.T, c docCommand, dir string) {
	t.Chdir(dir)
	for k, v := range c.env {
		t.Setenv(k, v)
	}
	out, errOut, code := run(t, c.args[1:]...)
	if c.redirect != "" {
		if err := os.WriteFile(filepath.Join(dir, c.redirect), []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if code != c.exit {
		t.Fatalf("%s\nexit %d, the doc says %d (<!-- doctest: exit N --> before the block)\nstderr: %.2000s", c, code, c.exit, errOut)
	}
	if c.shown == nil {
		return
	}
	got := splitOutput(out + errOut)
	if msg := matchShown(trimBlank(c.shown), got); msg != "" {
		t.Errorf("%s\nthe output drifted from the doc: %s\n--- the program printed:\n%s", c, msg, strings.Join(got, "\n"))
	}
}

func splitOutput(s string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		out = append(out, strings.TrimRight(sc.Text(), " \t"))
	}
	return trimBlank(out)
}

func trimBlank(l []string) []string {
	for len(l) > 0 && strings.TrimSpace(l[len(l)-1]) == "" {
		l = l[:len(l)-1]
	}
	return l
}

func isElision(l string) bool {
	s := strings.TrimSpace(l)
	return s == "..." || s == "…"
}

// matchShown reports how shown (with elision lines) fails to match got,
// or "" when it matches.
func matchShown(shown, got []string) string {
	var parts [][]string
	cur := []string{}
	elided := false
	for _, l := range shown {
		if isElision(l) {
			parts = append(parts, cur)
			cur, elided = []string{}, true
			continue
		}
		cur = append(cur, strings.TrimRight(l, " \t"))
	}
	parts = append(parts, cur)
	if !elided {
		if strings.Join(parts[0], "\n") != strings.Join(got, "\n") {
			return "the block shows the whole output (no `...` line), and it differs"
		}
		return ""
	}
	pos := 0
	for i, p := range parts {
		if len(p) == 0 {
			continue
		}
		at := indexLines(got, p, pos)
		if at < 0 || (i == 0 && at != 0) {
			return fmt.Sprintf("lines %q not found in order", p)
		}
		pos = at + len(p)
	}
	if last := parts[len(parts)-1]; len(last) > 0 && pos != len(got) {
		return "the block's last lines are not the end of the output (end it with `...`)"
	}
	return ""
}

func indexLines(got, want []string, from int) int {
	for i := from; i+len(want) <= len(got); i++ {
		ok := true
		for j := range want {
			if got[i+j] != want[j] {
				ok = false
				break
			}
		}
		if ok {
			return i
		}
	}
	return -1
}

// TestDocsMatcher keeps the doc comparison able to fail.
func TestDocsMatcher(t *testing.T) {
	got := []string{"a", "b", "c", "d"}
	for _, tc := range []struct {
		shown []string
		ok    bool
	}{
		{[]string{"a", "b", "c", "d"}, true},
		{[]string{"a", "b", "c"}, false},
		{[]string{"a", "b", "..."}, true},
		{[]string{"b", "..."}, false},
		{[]string{"a", "...", "d"}, true},
		{[]string{"a", "...", "c"}, false},
		{[]string{"a", "…", "c", "..."}, true},
		{[]string{"a", "...", "x", "..."}, false},
	} {
		if msg := matchShown(tc.shown, got); (msg == "") != tc.ok {
			t.Errorf("matchShown(%q) = %q, want ok=%v", tc.shown, msg, tc.ok)
		}
	}
	for line, want := range map[string][]string{
		`gpuimg a 'b c' "d"`:          {"gpuimg", "a", "b c", "d"},
		`gpuimg a > out.json`:         nil,
		`gpuimg a | jq`:               nil,
		`gpuimg a "$(x)"`:             nil,
		`gpuimg probe judge r/*.json`: nil,
	} {
		words, redirect, ok := splitWords(line)
		if want == nil && line == `gpuimg a > out.json` {
			if !ok || redirect != "out.json" || len(words) != 2 {
				t.Errorf("splitWords(%q) = %q %q %v", line, words, redirect, ok)
			}
			continue
		}
		if ok != (want != nil) || (ok && strings.Join(words, "|") != strings.Join(want, "|")) {
			t.Errorf("splitWords(%q) = %q, %v", line, words, ok)
		}
	}
}
