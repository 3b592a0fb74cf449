package upstream

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"regexp"
	"strconv"
)

// A torch wheel is a zip of one to three GB; the compiled GPU
// architectures are only in the device code of torch/lib/libtorch_cuda.so.
// wheelArchs reads that one member without downloading the wheel:
//
//  1. a suffix range request for the last tailSize bytes, which hold the
//     end-of-central-directory record (and its zip64 form), and whose
//     Content-Range gives the wheel's size;
//  2. a range request for the rest of the central directory, if it
//     starts before that tail;
//  3. archive/zip reads the directory from those bytes; a range request
//     for the member's local header (30 bytes plus name and extra) gives
//     where its data starts;
//  4. one range request for the member's compressed bytes, streamed
//     through inflate (or as is, if stored) and a CRC-32 into the
//     fat-binary scanner; nothing is held in memory or written to disk.
//
// A server that answers a range request with the whole file (200) is an
// error: gpuimg does not download whole wheels.

const (
	libtorchCUDA = "torch/lib/libtorch_cuda.so"
	// tailSize covers the end record with the longest comment zip
	// allows (22+65535 bytes) plus the zip64 locator and record.
	tailSize = 128 << 10
	// maxDirectory bounds the central directory read: a torch wheel's is
	// a few MiB (about 20,000 entries).
	maxDirectory = 64 << 20
)

var contentRangeRE = regexp.MustCompile(`^bytes ([0-9]+)-([0-9]+)/([0-9]+)$`)

// rangeFile is an io.ReaderAt over a remote file: reads inside the bytes
// already fetched (the tail and the central directory) are served from
// memory, others by one range request each. Not safe for concurrent use.
type rangeFile struct {
	o       *options
	ctx     context.Context //nolint:containedctx // lives for one wheelArchs call, as io.ReaderAt has no context
	url     string
	size    int64
	start   int64  // offset of buf in the file
	buf     []byte // bytes [start, size)
	fetched int64  // body bytes received, all requests
}

// get fetches [off, off+n) (n < 0: the last -n bytes) and returns the
// body, the offset it starts at and the file's size.
func (f *rangeFile) get(off, n int64) (io.ReadCloser, int64, int64, error) {
	req, err := http.NewRequestWithContext(f.ctx, http.MethodGet, f.url, nil)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("get %s: %w", f.url, err)
	}
	if n < 0 {
		req.Header.Set("Range", fmt.Sprintf("bytes=%d", n))
	} else {
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", off, off+n-1))
	}
	req.Header.Set("User-Agent", f.o.userAgent)
	// Accept-Encoding is set so that the transport does not ask for gzip
	// and then hide the real byte counts.
	req.Header.Set("Accept-Encoding", "identity")
	resp, err := f.o.client.Do(req)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("get %s (%s): %w", f.url, req.Header.Get("Range"), err)
	}
	if resp.StatusCode != http.StatusPartialContent {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return nil, 0, 0, &FormatError{URL: f.url, Err: fmt.Errorf("the server answered a range request with the whole file (200); it does not honour Range, and gpuimg does not download whole wheels (use WithWheelArchs(nil) / --wheel-archs=false)")}
		}
		return nil, 0, 0, fmt.Errorf("get %s (%s): %s", f.url, req.Header.Get("Range"), resp.Status)
	}
	m := contentRangeRE.FindStringSubmatch(resp.Header.Get("Content-Range"))
	if m == nil {
		resp.Body.Close()
		return nil, 0, 0, &FormatError{URL: f.url, Err: fmt.Errorf("206 with Content-Range %q, not bytes FIRST-LAST/SIZE", resp.Header.Get("Content-Range"))}
	}
	first, _ := strconv.ParseInt(m[1], 10, 64)
	last, _ := strconv.ParseInt(m[2], 10, 64)
	size, _ := strconv.ParseInt(m[3], 10, 64)
	if last < first || last >= size || (n >= 0 && (first != off || last != off+n-1)) {
		resp.Body.Close()
		return nil, 0, 0, &FormatError{URL: f.url, Err: fmt.Errorf("asked for %s, got Content-Range %q", req.Header.Get("Range"), resp.Header.Get("Content-Range"))}
	}
	return &countingBody{ReadCloser: resp.Body, n: &f.fetched, left: last - first + 1}, first, size, nil
}

// countingBody counts what is read and fails on a short body.
type countingBody struct {
	io.ReadCloser
	n    *int64
	left int64
}

func (c *countingBody) Read(p []byte) (int, error) {
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	if len(p) == 0 {
		return 0, io.EOF
	}
	n, err := c.ReadCloser.Read(p)
	*c.n += int64(n)
	c.left -= int64(n)
	if errors.Is(err, io.EOF) && c.left > 0 {
		err = io.ErrUnexpectedEOF
	}
	if err == nil && c.left == 0 {
		err = io.EOF
	}
	return n, err
}

func (f *rangeFile) readAll(off, n int64) ([]byte, int64, int64, error) {
	body, first, size, err := f.get(off, n)
	if err != nil {
		return nil, 0, 0, err
	}
	defer body.Close()
	b, err := io.ReadAll(body)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("get %s: %w", f.url, err)
	}
	return b, first, size, nil
}

// ReadAt implements io.ReaderAt.
func (f *rangeFile) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off >= f.size {
		return 0, io.EOF
	}
	n := min(int64(len(p)), f.size-off)
	if off >= f.start {
		copy(p, f.buf[off-f.start:off-f.start+n])
	} else {
		b, _, _, err := f.readAll(off, min(n, f.start-off))
		if err != nil {
			return 0, err
		}
		copy(p, b)
		if int64(len(b)) < n {
			copy(p[len(b):], f.buf[:n-int64(len(b))])
		}
	}
	if n < int64(len(p)) {
		return int(n), io.EOF
	}
	return int(n), nil
}

// directoryStart reads the end records in f.buf and returns where the
// central directory starts.
func (f *rangeFile) directoryStart() (int64, error) {
	b := f.buf
	i := bytes.LastIndex(b, []byte("PK\x05\x06"))
	if i < 0 || len(b)-i < 22 {
		return 0, &FormatError{URL: f.url, Err: fmt.Errorf("no end-of-central-directory record in the last %d bytes; not a zip (wheel)", len(b))}
	}
	off := int64(binary.LittleEndian.Uint32(b[i+16:]))
	if off != 0xFFFFFFFF && binary.LittleEndian.Uint16(b[i+10:]) != 0xFFFF {
		return off, nil
	}
	// zip64: the locator sits just before the end record and points at
	// the zip64 end record, which holds the 64-bit offset.
	if i < 20 || string(b[i-20:i-16]) != "PK\x06\x07" {
		return 0, &FormatError{URL: f.url, Err: fmt.Errorf("zip64 end-of-central-directory locator missing")}
	}
	rec := int64(binary.LittleEndian.Uint64(b[i-20+8:]))
	if rec < f.start || rec+56 > f.size {
		return 0, &FormatError{URL: f.url, Err: fmt.Errorf("zip64 end record at %d is outside the last %d bytes", rec, len(b))}
	}
	r := b[rec-f.start:]
	if string(r[:4]) != "PK\x06\x06" {
		return 0, &FormatError{URL: f.url, Err: fmt.Errorf("no zip64 end-of-central-directory record at %d", rec)}
	}
	return int64(binary.LittleEndian.Uint64(r[48:])), nil
}

// wheelArchs reads the architectures of libtorch_cuda.so in the wheel at
// u. fetched is the number of bytes received.
func (o *options) wheelArchs(ctx context.Context, u string) (sass, ptx []string, fetched int64, err error) {
	f := &rangeFile{o: o, ctx: ctx, url: u}
	tail, first, size, err := f.readAll(0, -tailSize)
	if err != nil {
		return nil, nil, f.fetched, err
	}
	f.start, f.buf, f.size = first, tail, size
	dir, err := f.directoryStart()
	if err != nil {
		return nil, nil, f.fetched, err
	}
	switch {
	case dir < 0 || dir > f.size:
		return nil, nil, f.fetched, &FormatError{URL: u, Err: fmt.Errorf("central directory offset %d does not fit a %d-byte file", dir, size)}
	case f.start-dir > maxDirectory:
		return nil, nil, f.fetched, &FormatError{URL: u, Err: fmt.Errorf("central directory of %d bytes is larger than %d MiB", f.start-dir, maxDirectory>>20)}
	case dir < f.start:
		head, _, _, err := f.readAll(dir, f.start-dir)
		if err != nil {
			return nil, nil, f.fetched, err
		}
		f.start, f.buf = dir, append(head, f.buf...)
	}
	zr, err := zip.NewReader(f, f.size)
	if err != nil {
		return nil, nil, f.fetched, &FormatError{URL: u, Err: fmt.Errorf("read the zip's central directory: %w", err)}
	}
	var member *zip.File
	for _, zf := range zr.File {
		if zf.Name == libtorchCUDA {
			member = zf
			break
		}
	}
	if member == nil {
		return nil, nil, f.fetched, &FormatError{URL: u, Err: fmt.Errorf("the wheel has no %s", libtorchCUDA)}
	}
	if member.Method != zip.Store && member.Method != zip.Deflate {
		return nil, nil, f.fetched, &FormatError{URL: u, Err: fmt.Errorf("%s is compressed with method %d; only stored and deflated members are read", libtorchCUDA, member.Method)}
	}
	dataOff, err := member.DataOffset()
	if err != nil {
		return nil, nil, f.fetched, &FormatError{URL: u, Err: fmt.Errorf("read %s's local header: %w", libtorchCUDA, err)}
	}
	csize := int64(member.CompressedSize64)
	if dataOff < 0 || dataOff+csize > f.size {
		return nil, nil, f.fetched, &FormatError{URL: u, Err: fmt.Errorf("%s's data (%d bytes at %d) overruns the %d-byte file", libtorchCUDA, csize, dataOff, f.size)}
	}
	body, _, _, err := f.get(dataOff, csize)
	if err != nil {
		return nil, nil, f.fetched, err
	}
	defer body.Close()
	var r io.Reader = body
	if member.Method == zip.Deflate {
		fr := flate.NewReader(body)
		defer fr.Close()
		r = fr
	}
	crc := crc32.NewIEEE()
	counted := &countingReader{r: io.TeeReader(r, crc)}
	sass, ptx, err = o.archs(counted)
	if err != nil {
		return nil, nil, f.fetched, &FormatError{URL: u, Err: fmt.Errorf("scan %s: %w", libtorchCUDA, err)}
	}
	if _, err := io.Copy(io.Discard, counted); err != nil {
		return nil, nil, f.fetched, fmt.Errorf("read %s of %s: %w", libtorchCUDA, u, err)
	}
	if counted.n != int64(member.UncompressedSize64) || crc.Sum32() != member.CRC32 {
		return nil, nil, f.fetched, &FormatError{URL: u, Err: fmt.Errorf("%s: %d bytes with CRC-32 %08x, the directory says %d bytes with %08x", libtorchCUDA, counted.n, crc.Sum32(), member.UncompressedSize64, member.CRC32)}
	}
	if len(sass) == 0 && len(ptx) == 0 {
		return nil, nil, f.fetched, &FormatError{URL: u, Err: fmt.Errorf("%s holds no device code; not a CUDA build", libtorchCUDA)}
	}
	return sass, ptx, f.fetched, nil
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
