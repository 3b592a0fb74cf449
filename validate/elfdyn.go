package validate

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"sort"
	"strings"
)

// elfDyn is what an ELF file's dynamic section says, read by dynReader.
type elfDyn struct {
	machine elf.Machine
	// static is true for an executable without a dynamic segment.
	static  bool
	soname  string
	needed  []string
	rpath   []string // DT_RPATH split on ':'
	runpath []string // DT_RUNPATH split on ':'
	// hasRunpath: a DT_RUNPATH entry exists, which makes ld.so ignore
	// DT_RPATH (even an empty one).
	hasRunpath bool
}

// dynReader reads the dynamic section of an ELF file from its bytes as
// they stream past (it is an io.Writer fed by a tee), without seeking
// and without keeping the file: the ELF header and program headers,
// then the dynamic segment, and the strings its entries name.
//
// The string table (.dynstr) usually lies before the dynamic segment, in
// the first PT_LOAD, and where it is becomes known only from the dynamic
// segment (DT_STRTAB). So while the bytes before the dynamic segment
// pass, dynReader keeps the NUL-terminated printable strings of the first
// PT_LOAD that can be a library name or a search path (they contain
// ".so", "/" or "$"), with their offsets; symbol names are dropped. A
// string table placed after the dynamic segment (patchelf moves a grown
// one there) is scanned the same way, from the first string the dynamic
// entries name to the last. A name dynReader did not keep makes the file
// unreadable, never a false "missing".
type dynReader struct {
	maxOff  int64 // the dynamic segment must end before this offset
	maxScan int64 // bytes of strings scanned before it
	pos     int64 // bytes seen
	state   dynState
	err     error
	res     elfDyn

	head     []byte // ELF header, then the program header table
	class    elf.Class
	bo       binary.ByteOrder
	phoff    int64
	phent    int64
	phsize   int64
	loads    []elfLoad
	dynOff   int64
	dynSize  int64
	scanFrom int64
	scanTo   int64
	dyn      []byte

	// strings kept while scanning
	strs    []keptString
	kept    int
	cur     []byte
	curFrom int64
	curBad  bool
	starts  []int

	// references into the string table, resolved at the end
	strOff   int64
	strSize  int64
	refs     []dynRef
	lateFrom int64
	lateTo   int64
}

type dynState uint8

const (
	dynHeader dynState = iota
	dynPhdrs
	dynBefore // scanning or skipping up to the dynamic segment
	dynSegment
	dynLate // skipping to, then reading, a string table after the segment
	dynDone
)

type elfLoad struct {
	off, vaddr, filesz int64
	exec               bool
}

type keptString struct {
	off int64
	s   string
}

type dynRef struct {
	tag elf.DynTag
	off int64 // offset in the string table
}

const (
	maxKeptString  = 16 << 10  // longest string kept (a long RPATH list)
	maxKeptStrings = 1 << 20   // bytes of strings kept per file
	maxDynSegment  = 256 << 10 // bytes of dynamic segment read
)

func newDynReader(maxOff, maxScan int64) *dynReader {
	return &dynReader{maxOff: maxOff, maxScan: maxScan}
}

// done reports whether the reader needs no more bytes: it has what it
// wants, or knows it cannot get it (err), or the file is no ELF object.
func (d *dynReader) done() bool { return d.state == dynDone }

// result is the dynamic section, nil for a file that is not an ELF
// executable or shared object; err says why a file that is one could not
// be read. Call it once no more bytes will come.
func (d *dynReader) result() (*elfDyn, error) {
	if d.err != nil {
		return nil, d.err
	}
	if d.state != dynDone {
		if d.state == dynHeader && len(d.head) < 4 || d.class == elf.ELFCLASSNONE {
			return nil, nil
		}
		return nil, fmt.Errorf("ELF file ends at byte %d, before its dynamic section was read", d.pos)
	}
	if d.class == elf.ELFCLASSNONE {
		return nil, nil
	}
	return &d.res, nil
}

func (d *dynReader) fail(format string, args ...any) {
	d.err = fmt.Errorf(format, args...)
	d.state = dynDone
}

// Write takes the next bytes of the file; it never fails.
func (d *dynReader) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 && d.state != dynDone {
		var used int
		switch d.state {
		case dynHeader:
			used = d.takeHeader(p)
		case dynPhdrs:
			used = d.takePhdrs(p)
		case dynBefore:
			used = d.takeBefore(p)
		case dynSegment:
			used = d.takeSegment(p)
		case dynLate:
			used = d.takeLate(p)
		}
		p = p[used:]
		d.pos += int64(used)
	}
	d.pos += int64(len(p))
	return n, nil
}

// fill appends to buf up to want bytes of p and says how many it took.
func fill(buf *[]byte, want int, p []byte) int {
	k := min(want-len(*buf), len(p))
	*buf = append(*buf, p[:k]...)
	return k
}

func (d *dynReader) takeHeader(p []byte) int {
	want := 16
	if len(d.head) >= 16 {
		want = 52
		if elf.Class(d.head[elf.EI_CLASS]) == elf.ELFCLASS64 {
			want = 64
		}
	}
	used := fill(&d.head, want, p)
	if len(d.head) < want {
		return used
	}
	h := d.head
	if want == 16 {
		if string(h[:4]) != elf.ELFMAG {
			d.state = dynDone // not ELF
			return used
		}
		return used
	}
	switch elf.Data(h[elf.EI_DATA]) {
	case elf.ELFDATA2LSB:
		d.bo = binary.LittleEndian
	case elf.ELFDATA2MSB:
		d.bo = binary.BigEndian
	default:
		d.state = dynDone
		return used
	}
	class := elf.Class(h[elf.EI_CLASS])
	typ := elf.Type(d.bo.Uint16(h[16:]))
	if typ != elf.ET_EXEC && typ != elf.ET_DYN || class != elf.ELFCLASS32 && class != elf.ELFCLASS64 {
		d.state = dynDone // an object file, a core dump: nothing ld.so loads
		return used
	}
	d.class = class
	d.res.machine = elf.Machine(d.bo.Uint16(h[18:]))
	var entsize, num int64
	if class == elf.ELFCLASS64 {
		d.phoff = int64(d.bo.Uint64(h[32:]))
		entsize, num = int64(d.bo.Uint16(h[54:])), int64(d.bo.Uint16(h[56:]))
	} else {
		d.phoff = int64(d.bo.Uint32(h[28:]))
		entsize, num = int64(d.bo.Uint16(h[42:])), int64(d.bo.Uint16(h[44:]))
	}
	minEnt := int64(32)
	if class == elf.ELFCLASS64 {
		minEnt = 56
	}
	d.phent, d.phsize = entsize, entsize*num
	switch {
	case num == 0:
		d.res.static = true
		d.state = dynDone
	case entsize < minEnt || d.phoff < int64(want) || d.phoff > 1<<20 || d.phsize > 64<<10:
		d.fail("ELF program headers at byte %d (%d of %d bytes) are out of bounds", d.phoff, num, entsize)
	default:
		d.head = d.head[:0]
		d.state = dynPhdrs
	}
	return used
}

func (d *dynReader) takePhdrs(p []byte) int {
	skip := 0
	if d.pos < d.phoff {
		skip = int(min(d.phoff-d.pos, int64(len(p))))
		if skip == len(p) {
			return skip
		}
	}
	used := skip + fill(&d.head, int(d.phsize), p[skip:])
	if int64(len(d.head)) < d.phsize {
		return used
	}
	ent := d.phent
	d.dynOff = -1
	for i := int64(0); i+ent <= d.phsize; i += ent {
		ph := d.head[i : i+ent]
		typ := elf.ProgType(d.bo.Uint32(ph))
		var off, vaddr, filesz int64
		var flags elf.ProgFlag
		if d.class == elf.ELFCLASS64 {
			flags = elf.ProgFlag(d.bo.Uint32(ph[4:]))
			off, vaddr, filesz = int64(d.bo.Uint64(ph[8:])), int64(d.bo.Uint64(ph[16:])), int64(d.bo.Uint64(ph[32:]))
		} else {
			flags = elf.ProgFlag(d.bo.Uint32(ph[24:]))
			off, vaddr, filesz = int64(d.bo.Uint32(ph[4:])), int64(d.bo.Uint32(ph[8:])), int64(d.bo.Uint32(ph[16:]))
		}
		if off < 0 || filesz < 0 {
			d.fail("ELF program header %d has a negative offset or size", i/ent)
			return used
		}
		switch typ {
		case elf.PT_LOAD:
			d.loads = append(d.loads, elfLoad{off: off, vaddr: vaddr, filesz: filesz, exec: flags&elf.PF_X != 0})
		case elf.PT_DYNAMIC:
			d.dynOff, d.dynSize = off, filesz
		}
	}
	switch {
	case d.dynOff < 0:
		d.res.static = true
		d.state = dynDone
	case d.dynSize > maxDynSegment:
		d.fail("ELF dynamic segment is %d bytes, more than the %d read", d.dynSize, maxDynSegment)
	case d.dynOff > d.maxOff || d.dynOff+d.dynSize > d.maxOff:
		d.fail("ELF dynamic segment ends at byte %d, past the %d bytes read per file (raise Limits.MaxELFBytes)", d.dynOff+d.dynSize, d.maxOff)
	case d.dynOff < d.pos+int64(used):
		d.fail("ELF dynamic segment at byte %d overlaps the headers", d.dynOff)
	default:
		// Strings are kept only from the first PT_LOAD: the linker puts
		// .dynstr there, in front of the code. Where that segment holds
		// the code too (no -z separate-code), .dynstr is in its first
		// part, and a quarter of the scan limit is scanned.
		d.scanFrom = d.pos + int64(used)
		d.scanTo = min(d.dynOff, d.scanFrom+d.maxScan)
		if len(d.loads) > 0 {
			first := d.loads[0]
			for _, l := range d.loads[1:] {
				if l.off < first.off {
					first = l
				}
			}
			d.scanTo = min(d.scanTo, first.off+first.filesz)
			if first.exec {
				d.scanTo = min(d.scanTo, d.scanFrom+d.maxScan/4)
			}
		}
		d.curFrom = d.scanFrom
		d.head = nil
		d.state = dynBefore
	}
	return used
}

func (d *dynReader) takeBefore(p []byte) int {
	n := int(min(d.dynOff-d.pos, int64(len(p))))
	if d.pos < d.scanTo {
		d.scan(p[:min(n, int(d.scanTo-d.pos))], d.pos)
	}
	if d.pos+int64(n) == d.dynOff {
		d.state = dynSegment
	}
	return n
}

// scan keeps candidate strings of p, which starts at offset at. A
// string cut by the end of p is carried (d.cur) to the next call; the
// complete strings between are found from their marker bytes, so code
// and data with few markers pass at memchr speed.
func (d *dynReader) scan(p []byte, at int64) {
	if len(d.cur) > 0 || d.curBad {
		i := bytes.IndexByte(p, 0)
		if i < 0 {
			d.grow(p)
			return
		}
		d.grow(p[:i])
		d.endString()
		p, at = p[i+1:], at+int64(i)+1
	}
	j := bytes.LastIndexByte(p, 0)
	if j < 0 {
		d.curFrom = at
		d.grow(p)
		return
	}
	d.scanWhole(p[:j+1], at)
	d.curFrom = at + int64(j) + 1
	d.grow(p[j+1:])
}

// scanWhole keeps the candidates of q, a run of whole NUL-terminated
// strings starting at offset at.
func (d *dynReader) scanWhole(q []byte, at int64) {
	starts := d.starts[:0]
	for _, m := range [][]byte{{'/'}, {'$'}, []byte(".so")} {
		for off := 0; ; {
			h := bytes.Index(q[off:], m)
			if h < 0 {
				break
			}
			h += off
			st := bytes.LastIndexByte(q[:h], 0) + 1
			starts = append(starts, st)
			off = h + bytes.IndexByte(q[h:], 0) + 1 // the next string
		}
	}
	sort.Ints(starts)
	for i, st := range starts {
		if i > 0 && starts[i-1] == st {
			continue
		}
		d.keep(q[st:st+bytes.IndexByte(q[st:], 0)], at+int64(st))
	}
	d.starts = starts
}

func (d *dynReader) grow(p []byte) {
	if d.curBad || len(p) == 0 {
		return
	}
	if len(d.cur)+len(p) > maxKeptString {
		d.curBad = true
		return
	}
	d.cur = append(d.cur, p...)
}

func (d *dynReader) endString() {
	s, bad := d.cur, d.curBad
	d.cur, d.curBad = d.cur[:0], false
	if !bad && (bytes.Contains(s, []byte(".so")) || bytes.IndexByte(s, '/') >= 0 || bytes.IndexByte(s, '$') >= 0) {
		d.keep(s, d.curFrom)
	}
}

// keep records s, found at offset off, if it is printable and fits.
func (d *dynReader) keep(s []byte, off int64) {
	if len(s) == 0 || len(s) > maxKeptString || d.kept+len(s) > maxKeptStrings {
		return
	}
	for _, c := range s {
		if c < 0x20 || c > 0x7e {
			return
		}
	}
	d.strs = append(d.strs, keptString{off: off, s: string(s)})
	d.kept += len(s)
}

func (d *dynReader) takeSegment(p []byte) int {
	used := fill(&d.dyn, int(d.dynSize), p)
	if int64(len(d.dyn)) < d.dynSize {
		return used
	}
	d.cur = nil
	ent := 16
	if d.class == elf.ELFCLASS32 {
		ent = 8
	}
	strtab := int64(-1)
	for i := 0; i+ent <= len(d.dyn); i += ent {
		var tag elf.DynTag
		var val int64
		if ent == 16 {
			tag, val = elf.DynTag(d.bo.Uint64(d.dyn[i:])), int64(d.bo.Uint64(d.dyn[i+8:]))
		} else {
			tag, val = elf.DynTag(int32(d.bo.Uint32(d.dyn[i:]))), int64(d.bo.Uint32(d.dyn[i+4:]))
		}
		switch tag {
		case elf.DT_NULL:
			i = len(d.dyn)
		case elf.DT_NEEDED, elf.DT_SONAME, elf.DT_RPATH, elf.DT_RUNPATH:
			d.refs = append(d.refs, dynRef{tag: tag, off: val})
			if tag == elf.DT_RUNPATH {
				d.res.hasRunpath = true
			}
		case elf.DT_STRTAB:
			strtab = val
		case elf.DT_STRSZ:
			d.strSize = val
		}
	}
	d.dyn = nil
	if len(d.refs) == 0 {
		d.state = dynDone
		return used
	}
	d.strOff = -1
	for _, l := range d.loads {
		if strtab >= l.vaddr && strtab < l.vaddr+l.filesz {
			d.strOff = l.off + strtab - l.vaddr
		}
	}
	if d.strOff < 0 {
		d.fail("ELF string table (DT_STRTAB %#x) lies in no loaded segment", strtab)
		return used
	}
	end := d.pos + int64(used)
	d.lateFrom, d.lateTo = -1, -1
	for _, r := range d.refs {
		if r.off < 0 || d.strSize > 0 && r.off >= d.strSize {
			d.fail("ELF dynamic entry %s points past the string table", r.tag)
			return used
		}
		at := d.strOff + r.off
		if at < 0 || at > d.maxOff {
			d.fail("ELF dynamic entry %s points past the %d bytes read per file (raise Limits.MaxELFBytes)", r.tag, d.maxOff)
			return used
		}
		if at >= end {
			if d.lateFrom < 0 || at < d.lateFrom {
				d.lateFrom = at
			}
			d.lateTo = max(d.lateTo, at+maxKeptString)
		}
	}
	if d.lateFrom < 0 {
		d.finish()
		return used
	}
	if d.strSize > 0 {
		d.lateTo = min(d.lateTo, d.strOff+d.strSize)
	}
	switch {
	case d.lateTo > d.maxOff:
		d.fail("ELF string table ends past the %d bytes read per file (raise Limits.MaxELFBytes)", d.maxOff)
	case d.lateTo-d.lateFrom > d.maxScan:
		d.fail("ELF dynamic strings span %d bytes, more than the %d scanned", d.lateTo-d.lateFrom, d.maxScan)
	default:
		d.cur, d.curBad, d.curFrom = d.cur[:0], false, d.lateFrom
		d.state = dynLate
	}
	return used
}

func (d *dynReader) takeLate(p []byte) int {
	skip := 0
	if d.pos < d.lateFrom {
		skip = int(min(d.lateFrom-d.pos, int64(len(p))))
		if skip == len(p) {
			return skip
		}
	}
	at := d.pos + int64(skip)
	n := int(min(d.lateTo-at, int64(len(p)-skip)))
	d.scan(p[skip:skip+n], at)
	if at+int64(n) == d.lateTo {
		d.finish() // a string cut at lateTo is not needed: it starts past every reference
	}
	return skip + n
}

// finish turns the references into strings.
func (d *dynReader) finish() {
	d.state = dynDone
	for _, r := range d.refs {
		s, ok := d.str(d.strOff + r.off)
		if !ok {
			d.fail("ELF dynamic entry %s names a string at byte %d that was not kept (not a library name or path?)", r.tag, d.strOff+r.off)
			return
		}
		switch r.tag {
		case elf.DT_NEEDED:
			d.res.needed = append(d.res.needed, s)
		case elf.DT_SONAME:
			d.res.soname = s
		case elf.DT_RPATH:
			d.res.rpath = append(d.res.rpath, strings.Split(s, ":")...)
		case elf.DT_RUNPATH:
			d.res.runpath = append(d.res.runpath, strings.Split(s, ":")...)
		}
	}
	d.strs, d.cur = nil, nil
}

// str is the NUL-terminated string at file offset at, from those kept
// (a linker may share one string's tail with another).
func (d *dynReader) str(at int64) (string, bool) {
	i := sort.Search(len(d.strs), func(i int) bool { return d.strs[i].off > at }) - 1
	if i < 0 {
		return "", false
	}
	k := d.strs[i]
	if at-k.off >= int64(len(k.s)) {
		return "", false
	}
	return k.s[at-k.off:], true
}
