package validate

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/gpuimg/gpuimg/matrix"
)

// Device code in CUDA libraries lives in ELF .nv_fatbin sections as "fat
// binary" containers: a 16-byte header (magic 0xBA55ED50, version 1,
// header size 16, size of what follows) and then entries, each a header
// (kind: 1 PTX, 2 or 0x10 ELF/SASS; its own size; payload size; the
// target architecture; flags) followed by its payload. The layout was
// checked against cuobjdump --list-elf/--list-ptx on NVIDIA's libraries
// (see fatbin_test.go).
//
// An arch-specific target (sm_90a, sm_100a …) has the same architecture
// number as the plain one; the entry's flags tell them apart
// (flagArchSpecific). Its code runs on exactly that compute capability,
// while plain SASS also runs on later minors of the same major, so it is
// reported under its own name, "sm_90a", as cuobjdump lists it.
//
// A family-specific target (sm_100f, CUDA 12.9 and later) also keeps the
// plain number. Its cubins carry nothing that says so (a CUDA 12.9
// build's extracted sm_100f cubin is named sm_100; ELF e_flags hold the
// architecture, and from CUDA 13's ELF ABI version 8 not even the a
// variant reliably), and the fat binary entry flag cuobjdump reads for
// "sm_100f" is not in any public source. So f SASS is reported as plain
// SASS, which runs on exactly the same GPUs (NVIDIA's Table 28 lists the
// same major, equal or higher minor; matrix.TestFamilySpecificTable28).
// f PTX differs from plain PTX (it does not JIT across majors), and
// uncompressed PTX names its target in its text, ".target sm_100f", which
// ptxTarget reads; compressed PTX without the arch-specific flag stays
// plain (docs/matrix-data.md lists this as unconfirmed).
//
// Containers are 8-byte aligned in the file, so the scanner looks for the
// magic at 8-byte steps of the plain byte stream: no ELF parsing, no
// seeking, one pass, so it works on a layer's tar stream.

const (
	fatbinMagic      = 0xBA55ED50
	fatbinHeaderSize = 16
	entryMinHeader   = 32
	kindPTX          = 0x01
	kindELF          = 0x02
	kindELFAlt       = 0x10

	// entryFlagsEnd is where the 64-bit flags of an entry header end
	// (offset 40).
	entryFlagsEnd = 48
	// flagArchSpecific marks an entry compiled for an arch-specific
	// target (sm_90a). NVIDIA does not document the entry flags (0x1
	// 64-bit, 0x10 Linux and 0x2000 compressed are known from public
	// parsers); this bit was found on CUDA 12.4's fatbinary, which sets it
	// for sm=90a images, ELF and PTX alike, and on Debian's
	// libtorch_cuda.so.2.6.0, where it is set on exactly the cubins that
	// cuobjdump lists as sm_90a (fatbin_test.go). It is the fat binary's
	// counterpart of the cubin's own ELF flag EF_CUDA_ACCELERATORS_V1
	// (0x800, LLVM's name), which a compressed payload hides from a
	// one-pass scan. Family-specific targets (sm_100f, CUDA 12.9 and
	// later) are marked in fat binaries too (cuobjdump lists sm_100f
	// PTX), by a flag that CUDA 12.4, the newest toolkit Debian ships,
	// cannot write and no public source names; see ptxTarget for how
	// they are told apart where the payload allows.
	flagArchSpecific = 0x100000

	// ptxTargetWindow is how far into an uncompressed PTX payload the
	// .target directive is looked for: it follows the header comments
	// and .version, a few hundred bytes in.
	ptxTargetWindow = 4096
)

// Kernels lists the GPU architectures a library has device code for.
type Kernels struct {
	// SASS are architectures with native code (cubins), sm_XY, or
	// sm_XYa for arch-specific code that runs only on compute capability
	// X.Y (family-specific cubins are listed as sm_XY: see above).
	SASS []string `json:"sass"`
	// PTX are architectures with PTX that the driver can JIT forward
	// (sm_XYa: only for compute capability X.Y; sm_XYf: only within its
	// family, read from uncompressed PTX).
	PTX []string `json:"ptx,omitempty"`
	// Entries counts cubins and PTX files per architecture, as cuobjdump
	// --list-elf / --list-ptx would list them ("sm_80": 12).
	ELFCount map[string]int `json:"elf_count,omitempty"`
	PTXCount map[string]int `json:"ptx_count,omitempty"`
}

// Empty reports whether no device code was found.
func (k Kernels) Empty() bool { return len(k.SASS) == 0 && len(k.PTX) == 0 }

// ErrDamaged is wrapped when a fat binary's headers do not hold together
// (a corrupt header, an entry that overruns its container, a container
// cut short): the device code from there on cannot be read.
var ErrDamaged = errors.New("damaged fat binary")

// ScanFatbin reads r to its end and returns the architectures of the
// device code in the fat binaries it contains. On an error (ErrDamaged,
// or the reader's) the kernels are those read before it.
func ScanFatbin(r io.Reader) (Kernels, error) {
	cr := &offsetReader{r: r}
	br := bufio.NewReaderSize(cr, 1<<20)
	pos := func() int64 { return cr.n - int64(br.Buffered()) }
	k := Kernels{ELFCount: map[string]int{}, PTXCount: map[string]int{}}
	err := scanFatbins(br, pos, &k)
	k.SASS = sortedArchs(k.ELFCount)
	k.PTX = sortedArchs(k.PTXCount)
	if len(k.ELFCount) == 0 {
		k.ELFCount = nil
	}
	if len(k.PTXCount) == 0 {
		k.PTXCount = nil
	}
	return k, err
}

func scanFatbins(br *bufio.Reader, pos func() int64, k *Kernels) error {
	const window = 256 << 10
	for {
		b, err := br.Peek(window)
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
			return err // the reader's own error, even with data: bufio reports it once
		}
		if len(b) < fatbinHeaderSize {
			break
		}
		found := -1
		for off := 0; off+fatbinHeaderSize <= len(b); off += 8 {
			if binary.LittleEndian.Uint32(b[off:]) != fatbinMagic {
				continue
			}
			if validHeader(b[off:]) {
				found = off
				break
			}
			if damagedHeader(b[off:]) {
				return fmt.Errorf("%w: container header at byte %d has version %d, header size %d, size %d", ErrDamaged, pos()+int64(off),
					binary.LittleEndian.Uint16(b[off+4:]), binary.LittleEndian.Uint16(b[off+6:]), binary.LittleEndian.Uint64(b[off+8:]))
			}
		}
		if found < 0 {
			n := (len(b) - fatbinHeaderSize + 8) / 8 * 8
			if errors.Is(err, io.EOF) {
				n = len(b)
			}
			if _, err := br.Discard(n); err != nil {
				return err
			}
			continue
		}
		if _, err := br.Discard(found); err != nil {
			return err
		}
		start := pos()
		n, err := readContainer(br, k)
		if err != nil {
			return fmt.Errorf("container at byte %d: %w", start, err)
		}
		if pad := n % 8; pad != 0 {
			if _, err := br.Discard(int(8 - pad)); err != nil && !errors.Is(err, io.EOF) {
				return err
			}
		}
	}
	return nil
}

// damagedHeader reports whether the magic at b starts a container whose
// header is corrupt: one of its two small fixed fields is right and the
// rest is not. Chance data holding the magic matches neither.
func damagedHeader(b []byte) bool {
	return binary.LittleEndian.Uint16(b[4:]) == 1 || binary.LittleEndian.Uint16(b[6:]) == fatbinHeaderSize
}

// offsetReader counts the bytes read through it.
type offsetReader struct {
	r io.Reader
	n int64
}

func (o *offsetReader) Read(p []byte) (int, error) {
	n, err := o.r.Read(p)
	o.n += int64(n)
	return n, err
}

func validHeader(b []byte) bool {
	return binary.LittleEndian.Uint16(b[4:]) == 1 &&
		binary.LittleEndian.Uint16(b[6:]) == fatbinHeaderSize &&
		binary.LittleEndian.Uint64(b[8:]) < 1<<34
}

// readContainer consumes one container and returns its length in bytes.
func readContainer(br *bufio.Reader, k *Kernels) (int64, error) {
	h := make([]byte, fatbinHeaderSize)
	if _, err := io.ReadFull(br, h); err != nil {
		return 0, cutShort("header", err)
	}
	size := int64(binary.LittleEndian.Uint64(h[8:]))
	var done int64
	for done+entryMinHeader <= size {
		e, err := br.Peek(entryMinHeader)
		if err != nil {
			return 0, cutShort(fmt.Sprintf("entry at offset %d", done), err)
		}
		kind := binary.LittleEndian.Uint16(e[0:])
		hdr := int64(binary.LittleEndian.Uint32(e[4:]))
		payload := int64(binary.LittleEndian.Uint64(e[8:]))
		arch := binary.LittleEndian.Uint32(e[28:])
		if kind == 0 && hdr == 0 && payload == 0 {
			// Zero padding: the container holds no more entries.
			break
		}
		if hdr < entryMinHeader || hdr > 4096 || payload < 0 || payload > size || done+hdr+payload > size {
			return 0, fmt.Errorf("%w: entry at offset %d of a %d-byte container has a %d-byte header and a %d-byte payload", ErrDamaged, done, size, hdr, payload)
		}
		name := fmt.Sprintf("sm_%d", arch)
		if hdr >= entryFlagsEnd {
			e, err := br.Peek(entryFlagsEnd)
			if err != nil {
				return 0, cutShort(fmt.Sprintf("entry at offset %d", done), err)
			}
			if binary.LittleEndian.Uint64(e[40:])&flagArchSpecific != 0 {
				name += "a"
			}
		}
		if _, err := br.Discard(int(hdr)); err != nil {
			return 0, cutShort(fmt.Sprintf("entry at offset %d", done), err)
		}
		if kind == kindPTX && !strings.HasSuffix(name, "a") {
			// A payload cut short is damage, found before the entry is
			// counted: a prefix of the file never names it otherwise.
			p, err := br.Peek(int(min(payload, ptxTargetWindow)))
			if err != nil {
				return 0, cutShort(fmt.Sprintf("payload of the entry at offset %d", done), err)
			}
			name += ptxTarget(p, arch)
		}
		switch kind {
		case kindPTX:
			k.PTXCount[name]++
		case kindELF, kindELFAlt:
			k.ELFCount[name]++
		}
		if err := discard(br, payload); err != nil {
			return 0, cutShort(fmt.Sprintf("payload of the entry at offset %d", done), err)
		}
		done += hdr + payload
	}
	if err := discard(br, size-done); err != nil {
		return 0, cutShort("container", err)
	}
	return fatbinHeaderSize + size, nil
}

// cutShort names what the stream ended in: the end of a file inside a
// container is damage, anything else the reader's own error.
func cutShort(what string, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: the file ends inside the %s", ErrDamaged, what)
	}
	return fmt.Errorf("read fat binary %s: %w", what, err)
}

func discard(br *bufio.Reader, n int64) error {
	for n > 0 {
		step := min(n, 1<<30)
		d, err := br.Discard(int(step))
		n -= int64(d)
		if err != nil {
			return err
		}
	}
	return nil
}

// sortedArchs lists the architectures of m in matrix.CompareArchs order.
func sortedArchs(m map[string]int) []string {
	return slices.SortedFunc(maps.Keys(m), matrix.CompareArchs)
}

// ptxTargetRE is PTX's .target directive (PTX ISA, "Target Directives"):
// .target sm_100f, or sm_90a, optionally followed by more options.
var ptxTargetRE = regexp.MustCompile(`\.target[ \t]+sm_([0-9]{2,3})([af]?)[ \t]*[,\r\n/]`)

// ptxTarget is the suffix ("a", "f" or "") that an uncompressed PTX
// payload p names in its .target directive for architecture arch. The
// fat binary entry's flags mark arch-specific PTX (flagArchSpecific) but
// not family-specific PTX in any way a public source documents, while
// the text itself says ".target sm_100f" (LLVM's NVPTX backend and nvcc
// write the target as the -arch names it). The directive is believed
// only in plain text: everything before it printable, and its number the
// entry's own, so that a compressed payload, whose literals can hold the
// same bytes, is never read as one. Compressed PTX keeps the plain name.
func ptxTarget(p []byte, arch uint32) string {
	m := ptxTargetRE.FindSubmatchIndex(p)
	if m == nil || string(p[m[2]:m[3]]) != fmt.Sprint(arch) {
		return ""
	}
	for _, c := range p[:m[0]] {
		if (c < 0x20 || c > 0x7e) && c != '\n' && c != '\r' && c != '\t' {
			return ""
		}
	}
	return string(p[m[4]:m[5]])
}
