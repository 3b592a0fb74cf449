package gpuprobe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gpuimg/gpuimg/matrix"
)

// directChunk is the size of each O_DIRECT read and write; a multiple of
// every logical block size.
const directChunk = 1 << 20

// checkDataDir writes a file of size bytes in dir and reads it back
// bypassing the page cache (O_DIRECT; on a file system that refuses it,
// the cache is dropped for the file with posix_fadvise instead), and
// judges the read throughput against MinDataMBps. The file is removed.
func checkDataDir(ctx context.Context, dir string, size int64) Check {
	size = max(directChunk, size/directChunk*directChunk)
	mbps, how, err := readThroughput(ctx, dir, size)
	if err != nil {
		return Check{Name: "host/data-dir", Status: matrix.UnknownFact, Message: fmt.Sprintf("measure reads in %s: %v (give --data-dir a writable directory on the data's disk)", dir, err)}
	}
	msg := fmt.Sprintf("%s reads at %.0f MB/s (%d MiB file, %s)", dir, mbps, size>>20, how)
	if mbps < MinDataMBps {
		return Check{Name: "host/data-dir", Status: matrix.Warn, Message: msg + fmt.Sprintf(": under %.0f MB/s the GPUs wait on input; put the data set on local NVMe (instance store) or provision the network disk's throughput", MinDataMBps)}
	}
	return Check{Name: "host/data-dir", Status: matrix.Pass, Message: msg}
}

func readThroughput(ctx context.Context, dir string, size int64) (float64, string, error) {
	f, err := os.CreateTemp(dir, ".gpuimg-probe-read-*")
	if err != nil {
		return 0, "", err
	}
	name := f.Name()
	defer os.Remove(name)
	buf := alignedBuffer(directChunk)
	for i := range buf {
		buf[i] = byte(i * 31)
	}
	for off := int64(0); off < size; off += directChunk {
		if _, err := f.Write(buf); err != nil {
			f.Close()
			return 0, "", fmt.Errorf("write %s: %w", name, err)
		}
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return 0, "", fmt.Errorf("sync %s: %w", name, err)
	}
	if err := f.Close(); err != nil {
		return 0, "", err
	}
	how := "O_DIRECT"
	fd, err := unix.Open(name, unix.O_RDONLY|unix.O_DIRECT|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.EINVAL) {
		how = "page cache dropped with posix_fadvise: the file system refuses O_DIRECT"
		if fd, err = unix.Open(name, unix.O_RDONLY|unix.O_CLOEXEC, 0); err == nil {
			err = unix.Fadvise(fd, 0, 0, unix.FADV_DONTNEED)
		}
	}
	if err != nil {
		return 0, "", fmt.Errorf("open %s: %w", name, err)
	}
	r := os.NewFile(uintptr(fd), name)
	defer r.Close()
	start := time.Now()
	var n int64
	for n < size {
		if err := context.Cause(ctx); err != nil {
			return 0, "", err
		}
		m, err := r.Read(buf)
		n += int64(m)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, "", fmt.Errorf("read %s: %w", name, err)
		}
	}
	secs := max(time.Since(start).Seconds(), 1e-6)
	return float64(n) / 1e6 / secs, how, nil
}

// alignedBuffer is n bytes starting at a 4096-byte boundary, as O_DIRECT
// needs.
func alignedBuffer(n int) []byte {
	const align = 4096
	b := make([]byte, n+align)
	off := int(uintptr(unsafe.Pointer(&b[0])) & (align - 1)) //nolint:gosec // address arithmetic for alignment only
	if off != 0 {
		off = align - off
	}
	return b[off : off+n]
}
