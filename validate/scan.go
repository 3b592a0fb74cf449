package validate

import (
	"bytes"
	"io"
	"path"
	"slices"
	"strings"
	"sync/atomic"
)

// The content scan reads every regular file that is text, to its end or
// to the per-file bound, for the token formats of tokenPatterns, as
// gitleaks and trivy do: a rule's regular expression runs only on a
// window around an occurrence of one of its keywords, so most of a file
// costs one table lookup a byte (scanKeywords), not a regexp. Files are
// streamed in chunks; a chunk keeps the tail of the one before, so a
// token cut by a chunk boundary is found. A file whose first bytes hold a
// NUL or the ELF magic is binary and is not read further for the scan.

const (
	// scanChunk is how much of a file is searched at once.
	scanChunk = 256 << 10
	// scanBack is how far before a keyword a match may start (a URL's
	// scheme and user before "://", a PEM header before "PRIVATE KEY").
	scanBack = 256
	// scanSniff is how many leading bytes decide whether a file is text.
	scanSniff = 8 << 10
	// maxScanHits is the most findings one file reports.
	maxScanHits = 16
	// defaultMaxScanFileBytes and defaultMaxScanBytes bound the scan
	// (Limits.MaxSecretScanFileBytes, Limits.MaxSecretScanBytes).
	defaultMaxScanFileBytes = 256 << 20
	defaultMaxScanBytes     = 16 << 30
)

// scanBudget is what the content scan may still read over all layers,
// shared by the layers read at once.
type scanBudget struct {
	perFile int64
	total   int64
	left    atomic.Int64
	// cut counts files not read to their end: over the per-file bound, or
	// after the total ran out.
	cut atomic.Int64
}

func newScanBudget(lim Limits) *scanBudget {
	b := &scanBudget{perFile: lim.MaxSecretScanFileBytes}
	if b.perFile <= 0 {
		b.perFile = defaultMaxScanFileBytes
	}
	total := lim.MaxSecretScanBytes
	if total <= 0 {
		total = defaultMaxScanBytes
	}
	b.total = total
	b.left.Store(total)
	return b
}

// fileScan scans one file's content as it is written to it (an io.Writer
// for io.TeeReader).
type fileScan struct {
	budget *scanBudget
	buf    []byte
	off    int64 // the file offset of buf[0]
	done   int   // keyword positions below buf[done] were searched
	n      int64 // bytes taken
	binary bool
	full   bool // the per-file or total bound was reached
	seen   map[[2]int64]bool
	hits   []secretMatch
	// strongOnly is set for documentation and tests (docOrTest).
	strongOnly bool
}

func (b *scanBudget) file(p string) *fileScan {
	return &fileScan{budget: b, seen: map[[2]int64]bool{}, strongOnly: docOrTest(p)}
}

// docOrTest says whether a path is documentation or a test, whose
// private keys, URLs with passwords and kubeconfig tokens are examples
// (Debian's /usr/share/doc, a package's tests/ or testdata/, *_test.go,
// test_*.py).
func docOrTest(p string) bool {
	if strings.HasPrefix(p, "usr/share/doc/") || strings.HasPrefix(p, "usr/share/man/") {
		return true
	}
	dir, base := path.Split(p)
	for c := range strings.SplitSeq(strings.TrimSuffix(dir, "/"), "/") {
		switch c {
		case "test", "tests", "testdata", "testing", "fixtures", "examples", "docs", "doc":
			return true
		}
	}
	return strings.HasSuffix(base, "_test.go") || strings.HasPrefix(base, "test_") && strings.HasSuffix(base, ".py")
}

// wants says whether the rest of the file should still be read.
func (s *fileScan) wants() bool { return !s.binary && !s.full }

// Write takes the file's next bytes; it never fails, so the reader it
// tees is read as before.
func (s *fileScan) Write(p []byte) (int, error) {
	n := len(p)
	if !s.wants() {
		return n, nil
	}
	if room := s.budget.perFile - s.n; int64(len(p)) > room {
		p, s.full = p[:room], true
	}
	if s.budget.left.Add(-int64(len(p))) < 0 {
		s.full = true
		return n, nil
	}
	s.n += int64(len(p))
	s.buf = append(s.buf, p...)
	if s.n-int64(len(p)) < scanSniff && isBinary(s.buf[:min(len(s.buf), scanSniff)]) {
		s.binary, s.buf = true, nil
		return n, nil
	}
	if len(s.buf) >= scanChunk {
		s.search(false)
	}
	return n, nil
}

// isBinary sniffs a file's first bytes: a NUL, or ELF's magic.
func isBinary(b []byte) bool {
	return bytes.HasPrefix(b, []byte("\x7fELF")) || bytes.IndexByte(b, 0) >= 0
}

// finish reads what is left of r (the reader that tees into s) while the
// scan wants it, searches the last chunk and returns what was found, and
// whether the file was cut short by a bound.
func (s *fileScan) finish(r io.Reader) ([]secretMatch, bool, error) {
	if s.wants() {
		if _, err := io.Copy(io.Discard, r); err != nil {
			return nil, false, err
		}
	}
	if !s.binary {
		s.search(true)
	}
	if s.full {
		s.budget.cut.Add(1)
	}
	return s.hits, s.full, nil
}

// search looks for keywords in buf[done:limit] (to the end when final),
// runs each rule on a window around them, and drops what no later window
// needs.
func (s *fileScan) search(final bool) {
	limit := len(s.buf)
	if !final {
		limit -= 2*maxRuleLen + scanBack
	}
	if limit <= s.done {
		return
	}
	s.searchAll(limit)
	s.done = limit
	if drop := limit - scanBack; !final && drop > 0 {
		s.buf = append(s.buf[:0], s.buf[drop:]...)
		s.off += int64(drop)
		s.done -= drop
	}
}

// searchAll runs the keyword automaton over the bytes that can hold a
// keyword starting in buf[done:limit], and each rule on a window around
// its keywords.
func (s *fileScan) searchAll(limit int) {
	start, end := max(0, s.done-scanKeywords.maxLen+1), min(len(s.buf), limit+scanKeywords.maxLen-1)
	var skip [64]int // per rule: keywords before this were in a window already searched
	next, out := scanKeywords.next, scanKeywords.out
	st := int32(0)
	for i, c := range s.buf[start:end] {
		st = next[st][c]
		for _, h := range out[st] {
			k := start + i - h.n + 1
			if k < s.done || k >= limit || k < skip[h.rule] {
				continue
			}
			span := tokenPatterns[h.rule].spanOf()
			s.window(h.rule, k, span)
			// A keyword within span of k has its match inside the window
			// just searched.
			skip[h.rule] = k + span
		}
	}
}

// window runs rule i on the bytes around a keyword at k.
func (s *fileScan) window(i, k, span int) {
	p := &tokenPatterns[i]
	if p.weak && s.strongOnly {
		return
	}
	lo, hi := max(0, k-p.backOf()), min(len(s.buf), k+2*span)
	for _, m := range p.re.FindAllIndex(s.buf[lo:hi], 4) {
		key := [2]int64{int64(i), s.off + int64(lo+m[0])}
		if s.seen[key] || len(s.hits) >= maxScanHits {
			continue
		}
		s.seen[key] = true
		text := string(s.buf[lo+m[0] : lo+m[1]])
		if p.ok != nil && !p.ok(text) || p.keep == -2 && reservedHost(reURLCreds.FindStringSubmatch(text)[4]) {
			continue
		}
		s.hits = append(s.hits, secretMatch{what: p.what, shown: redact(*p, text)})
	}
}

// scanKeywords finds every rule's keywords in one pass over a chunk
// (Aho-Corasick, as gitleaks prefilters): one table lookup a byte,
// whatever the number of keywords. Built once, never changed.
var scanKeywords = newKeywordDFA(tokenPatterns)

// keywordDFA is an Aho-Corasick automaton with every transition filled in.
type keywordDFA struct {
	next   [][256]int32
	out    [][]keywordHit // the keywords that end in each state
	maxLen int
}

// keywordHit is a keyword of rule, n bytes long.
type keywordHit struct{ rule, n int }

func newKeywordDFA(ps []tokenPattern) *keywordDFA {
	if len(ps) > 64 {
		panic("validate: more token patterns than searchAll's skip array holds")
	}
	d := &keywordDFA{next: make([][256]int32, 1), out: make([][]keywordHit, 1)}
	for i, p := range ps {
		for _, kw := range p.keywords {
			d.insert(kw, keywordHit{rule: i, n: len(kw)})
		}
	}
	d.link()
	return d
}

// insert adds one keyword to the trie.
func (d *keywordDFA) insert(kw []byte, h keywordHit) {
	s := int32(0)
	for _, c := range kw {
		if d.next[s][c] == 0 {
			d.next = append(d.next, [256]int32{})
			d.out = append(d.out, nil)
			d.next[s][c] = int32(len(d.next) - 1)
		}
		s = d.next[s][c]
	}
	d.out[s] = append(d.out[s], h)
	d.maxLen = max(d.maxLen, len(kw))
}

// link turns the trie into the automaton: breadth first, each state's
// missing transitions are its failure state's, and it also reports the
// keywords its failure state ends.
func (d *keywordDFA) link() {
	fail := make([]int32, len(d.next))
	var queue []int32
	for c := range 256 {
		if s := d.next[0][c]; s != 0 {
			queue = append(queue, s)
		}
	}
	for len(queue) > 0 {
		r := queue[0]
		queue = queue[1:]
		if f := d.out[fail[r]]; len(f) > 0 {
			d.out[r] = append(slices.Clip(d.out[r]), f...)
		}
		for c := range 256 {
			if s := d.next[r][c]; s != 0 {
				fail[s] = d.next[fail[r]][c]
				queue = append(queue, s)
			} else {
				d.next[r][c] = d.next[fail[r]][c]
			}
		}
	}
}
