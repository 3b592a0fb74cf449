package validate

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpuimg/gpuimg/internal/testenv"
)

// buildSO builds a shared object with gcc, skipping the test only when
// no compiler exists and none can be installed.
func buildSO(t *testing.T, spec testenv.ELFSpec) []byte {
	t.Helper()
	b, err := testenv.SharedObject(t.Context(), t.TempDir(), spec)
	if errors.Is(err, testenv.ErrNoCC) {
		t.Skipf("building ELF fixtures needs gcc: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// feed streams b into a dynReader in chunks of n bytes, as a tar entry
// arrives, and stops where the reader is done.
func feed(b []byte, n int, maxOff int64) (*elfDyn, error) {
	d := newDynReader(maxOff, maxELFScan)
	for len(b) > 0 && !d.done() {
		k := min(n, len(b))
		if _, err := d.Write(b[:k]); err != nil {
			return nil, err
		}
		b = b[k:]
	}
	return d.result()
}

func dynStrings(t *testing.T, b []byte, tag elf.DynTag) []string {
	t.Helper()
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	s, err := f.DynString(tag)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestDynReaderAgreesWithDebugELF reads gcc's output as a stream, in
// chunks of every size from one byte, and compares with debug/elf, which
// reads the file whole through its section headers.
func TestDynReaderAgreesWithDebugELF(t *testing.T) {
	for _, spec := range []testenv.ELFSpec{
		{Soname: "libtorch_cuda.so", Needed: []string{"libcusparseLt.so.0", "libcublas.so.12", "libcuda.so.1"}, SearchPath: "$ORIGIN/../../cusparselt/lib:$ORIGIN/../../nvidia/cublas/lib"},
		{Soname: "libcublas.so.12", Needed: []string{"libcublasLt.so.12"}, SearchPath: "$ORIGIN", RunPath: true},
		{Needed: []string{"libc10.so"}},
		{Soname: "libnothing.so.1"},
		{Needed: []string{"libtorch.so"}, SearchPath: "$ORIGIN/../lib", Executable: true},
	} {
		b := buildSO(t, spec)
		want := map[elf.DynTag][]string{}
		for _, tag := range []elf.DynTag{elf.DT_NEEDED, elf.DT_SONAME, elf.DT_RPATH, elf.DT_RUNPATH} {
			want[tag] = dynStrings(t, b, tag)
		}
		for _, n := range []int{1, 3, 64, 4096, len(b)} {
			d, err := feed(b, n, 1<<30)
			if err != nil || d == nil {
				t.Fatalf("%+v in chunks of %d: %v, %v", spec, n, d, err)
			}
			got := map[elf.DynTag][]string{elf.DT_NEEDED: d.needed}
			if d.soname != "" {
				got[elf.DT_SONAME] = []string{d.soname}
			}
			if len(d.rpath) > 0 {
				got[elf.DT_RPATH] = []string{strings.Join(d.rpath, ":")}
			}
			if len(d.runpath) > 0 {
				got[elf.DT_RUNPATH] = []string{strings.Join(d.runpath, ":")}
			}
			for tag, w := range want {
				if !slices.Equal(got[tag], w) {
					t.Errorf("%+v in chunks of %d: %s = %q, debug/elf says %q", spec, n, tag, got[tag], w)
				}
			}
			if d.hasRunpath != spec.RunPath && spec.SearchPath != "" {
				t.Errorf("%+v: hasRunpath %v", spec, d.hasRunpath)
			}
			if d.machine != elf.EM_X86_64 && d.machine != elf.EM_AARCH64 {
				t.Errorf("machine %s", d.machine)
			}
		}
	}
}

// lateStrtab is an ELF64 shared object whose string table lies after its
// dynamic segment, where patchelf puts a grown one; filler bytes of
// symbol names lie between its first name and the others.
func lateStrtab(filler int) []byte {
	le := binary.LittleEndian
	fill := strings.Repeat("_ZN5torch8autograd4NodeD2Ev\x00", filler/28+1)[:filler/28*28]
	strs := "\x00libfoo.so.1\x00" + fill + "libbar.so.2\x00$ORIGIN/../lib\x00"
	b := make([]byte, 0x200+len(strs)+0x40)
	copy(b, elf.ELFMAG)
	b[elf.EI_CLASS], b[elf.EI_DATA], b[elf.EI_VERSION] = byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), 1
	le.PutUint16(b[16:], uint16(elf.ET_DYN))
	le.PutUint16(b[18:], uint16(elf.EM_X86_64))
	le.PutUint64(b[32:], 64) // e_phoff
	le.PutUint16(b[52:], 64) // e_ehsize
	le.PutUint16(b[54:], 56) // e_phentsize
	le.PutUint16(b[56:], 2)  // e_phnum
	ph := func(at int, typ elf.ProgType, off, vaddr, size uint64) {
		le.PutUint32(b[at:], uint32(typ))
		le.PutUint64(b[at+8:], off)
		le.PutUint64(b[at+16:], vaddr)
		le.PutUint64(b[at+32:], size)
	}
	ph(64, elf.PT_LOAD, 0, 0x10000, uint64(len(b)))
	ph(120, elf.PT_DYNAMIC, 0x100, 0x10100, 6*16)
	copy(b[0x200:], strs)
	bar := uint64(13 + len(fill))
	dyn := [][2]uint64{{uint64(elf.DT_NEEDED), 1}, {uint64(elf.DT_NEEDED), bar}, {uint64(elf.DT_RPATH), bar + 12}, {uint64(elf.DT_STRTAB), 0x10200}, {uint64(elf.DT_STRSZ), uint64(len(strs))}, {uint64(elf.DT_NULL), 0}}
	for i, e := range dyn {
		le.PutUint64(b[0x100+16*i:], e[0])
		le.PutUint64(b[0x100+16*i+8:], e[1])
	}
	return b
}

func TestDynReaderEdges(t *testing.T) {
	late := lateStrtab(0)
	for _, filler := range []int{0, 3 << 20} {
		d, err := feed(lateStrtab(filler), 4093, 1<<30)
		if err != nil || d == nil || !slices.Equal(d.needed, []string{"libfoo.so.1", "libbar.so.2"}) || !slices.Equal(d.rpath, []string{"$ORIGIN/../lib"}) {
			t.Errorf("string table after the dynamic segment, names %d bytes apart: %+v, %v", filler, d, err)
		}
	}
	if _, err := feed(late, 4096, 0x120); err == nil || !strings.Contains(err.Error(), "MaxELFBytes") {
		t.Errorf("dynamic segment past the limit: %v", err)
	}
	if _, err := feed(late[:0x180], 4096, 1<<30); err == nil || !strings.Contains(err.Error(), "ends at byte") {
		t.Errorf("cut short: %v", err)
	}
	for name, b := range map[string][]byte{
		"text":      []byte("INPUT(libc.so.6 libc_nonshared.a)\n"),
		"short":     []byte("\x7fEL"),
		"empty":     nil,
		"an object": append([]byte(elf.ELFMAG+"\x02\x01\x01"), make([]byte, 64)...),
	} {
		if d, err := feed(b, 7, 1<<30); d != nil || err != nil {
			t.Errorf("%s: %+v, %v; want no ELF object", name, d, err)
		}
	}
	// A string table name that is no library name or path is not kept
	// while scanning: the file is unreadable, not missing a library.
	odd := lateStrtab(0)
	copy(odd[0x200:], "\x00libfoo\x00")
	// Move the strings before the dynamic segment (offset 0xd0).
	copy(odd[0xd0:], odd[0x200:0x230])
	binary.LittleEndian.PutUint64(odd[0x100+3*16+8:], 0x100d0)
	if _, err := feed(odd, 4096, 1<<30); err == nil || !strings.Contains(err.Error(), "not kept") {
		t.Errorf("unkept string: %v", err)
	}
}

// TestDynReaderSystemFiles streams every ELF file of this machine's
// /usr/lib and /usr/bin through a dynReader and compares with debug/elf:
// real toolchains' layouts (with and without -z separate-code, large
// string tables), not only gcc's output for the fixtures.
func TestDynReaderSystemFiles(t *testing.T) {
	testenv.Require(t, "reads every library of this machine", testenv.Slow)
	var files []string
	for _, g := range []string{"/usr/lib/*-linux-gnu/*.so*", "/usr/lib/*-linux-gnu/*/*.so*", "/usr/lib64/*.so*", "/usr/bin/*"} {
		m, _ := filepath.Glob(g)
		files = append(files, m...)
	}
	n := 0
	for _, p := range files {
		if fi, err := os.Lstat(p); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		f, err := elf.NewFile(bytes.NewReader(b))
		if err != nil || f.Type != elf.ET_DYN && f.Type != elf.ET_EXEC {
			continue
		}
		needed, _ := f.DynString(elf.DT_NEEDED)
		runpath, _ := f.DynString(elf.DT_RUNPATH)
		rpath, _ := f.DynString(elf.DT_RPATH)
		d, err := feed(b, 32<<10, 1<<40)
		if err != nil || d == nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		n++
		if !slices.Equal(d.needed, needed) || strings.Join(d.runpath, ":") != strings.Join(runpath, ":") || strings.Join(d.rpath, ":") != strings.Join(rpath, ":") {
			t.Errorf("%s: needed %q runpath %q rpath %q; debug/elf says %q %q %q", p, d.needed, d.runpath, d.rpath, needed, runpath, rpath)
		}
	}
	if n < 10 {
		t.Skipf("only %d ELF files found here", n)
	}
	t.Logf("%d ELF files agree", n)
}

// FuzzDynReader: any bytes, in any chunking, give the same answer as
// the whole file at once, without a panic.
func FuzzDynReader(f *testing.F) {
	late := lateStrtab(0)
	f.Add(late, uint16(1))
	f.Add(late[:0x150], uint16(7))
	f.Add([]byte(elf.ELFMAG+"\x01\x01\x01"), uint16(3))
	f.Fuzz(func(t *testing.T, b []byte, chunk uint16) {
		whole, werr := feed(b, len(b)+1, 1<<20)
		part, perr := feed(b, int(chunk%97)+1, 1<<20)
		if (werr == nil) != (perr == nil) || werr != nil && werr.Error() != perr.Error() {
			t.Fatalf("whole: %v; in chunks of %d: %v", werr, chunk%97+1, perr)
		}
		if (whole == nil) != (part == nil) {
			t.Fatalf("whole %+v, chunks %+v", whole, part)
		}
		if whole != nil && (!slices.Equal(whole.needed, part.needed) || whole.soname != part.soname || !slices.Equal(whole.rpath, part.rpath) || !slices.Equal(whole.runpath, part.runpath)) {
			t.Fatalf("whole %+v, chunks %+v", whole, part)
		}
	})
}
