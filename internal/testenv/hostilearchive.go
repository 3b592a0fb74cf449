package testenv

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// dockerArchiveHead writes manifest.json (one image of layer) and a
// config.json to tw.
func dockerArchiveHead(tw *tar.Writer, layer string) error {
	for _, m := range []struct{ name, body string }{
		{"manifest.json", `[{"Config":"config.json","RepoTags":["x:y"],"Layers":["` + layer + `"]}]`},
		{"config.json", `{"rootfs":{"type":"layers","diff_ids":["sha256:0000000000000000000000000000000000000000000000000000000000000000"]}}`},
	} {
		if err := tw.WriteHeader(&tar.Header{Name: m.name, Mode: 0o644, Size: int64(len(m.body)), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		if _, err := io.WriteString(tw, m.body); err != nil {
			return err
		}
	}
	return nil
}

// SparseDockerArchive writes dir/sparse.tar, a docker-archive whose
// layer.tar member declares size bytes stored as a hole (os.Truncate):
// nothing large is written. pax makes layer.tar a PAX sparse member (GNU
// 1.0) instead: a few KiB of archive that a tar reader expands to size
// bytes of zeros.
func SparseDockerArchive(dir string, size int64, pax bool) (string, error) {
	file := filepath.Join(dir, "sparse.tar")
	f, err := os.Create(file)
	if err != nil {
		return "", err
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	if err := dockerArchiveHead(tw, "layer.tar"); err != nil {
		return "", err
	}
	if err := tw.Flush(); err != nil { // no Close: the members below are written by hand
		return "", err
	}
	if pax {
		if err := writeSparseMember(f, "layer.tar", size); err != nil {
			return "", err
		}
		return file, f.Close()
	}
	var hdr bytes.Buffer
	if err := tar.NewWriter(&hdr).WriteHeader(&tar.Header{Name: "layer.tar", Mode: 0o644, Size: size, Typeflag: tar.TypeReg}); err != nil {
		return "", err
	}
	if _, err := f.Write(hdr.Bytes()); err != nil {
		return "", err
	}
	end, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	return file, os.Truncate(file, end+size+1024) // the member's holes, then the end-of-archive blocks
}

// writeSparseMember writes name as a PAX sparse member (GNU format 1.0)
// of size bytes, all a hole, and the end-of-archive blocks: a PAX header
// (written by hand: tar.Writer writes no sparse files), then a member
// holding only the sparse map.
func writeSparseMember(f io.Writer, name string, size int64) error {
	var recs bytes.Buffer
	for _, kv := range [][2]string{{"GNU.sparse.major", "1"}, {"GNU.sparse.minor", "0"}, {"GNU.sparse.name", name}, {"GNU.sparse.realsize", fmt.Sprint(size)}} {
		rec := " " + kv[0] + "=" + kv[1] + "\n"
		n := len(rec) + 2
		if len(fmt.Sprint(n)+rec) != n {
			n++
		}
		fmt.Fprintf(&recs, "%d%s", n, rec)
	}
	pad := func(b []byte) []byte { return append(b, make([]byte, (512-len(b)%512)%512)...) }
	header := func(name string, size int64, flag byte) ([]byte, error) {
		var b bytes.Buffer
		if err := tar.NewWriter(&b).WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: size, Typeflag: tar.TypeReg, Format: tar.FormatUSTAR}); err != nil {
			return nil, err
		}
		h := b.Bytes()[:512]
		h[156] = flag // tar.Writer refuses to write a TypeXHeader itself
		copy(h[148:156], "        ")
		sum := 0
		for _, c := range h {
			sum += int(c)
		}
		copy(h[148:156], fmt.Sprintf("%06o\x00 ", sum))
		return h, nil
	}
	sparseMap := pad(fmt.Appendf(nil, "1\n%d\n0\n", size))
	xh, err := header("PaxHeaders/"+name, int64(recs.Len()), tar.TypeXHeader)
	if err != nil {
		return err
	}
	mh, err := header("GNUSparseFile.0/"+name, int64(len(sparseMap)), tar.TypeReg)
	if err != nil {
		return err
	}
	var out bytes.Buffer
	out.Write(xh)
	out.Write(pad(recs.Bytes()))
	out.Write(mh)
	out.Write(sparseMap)
	out.Write(make([]byte, 1024))
	_, err = f.Write(out.Bytes())
	return err
}

// LinkChainDockerArchive writes dir/chain.tar, a docker-archive whose
// layer is reached through n symbolic links (go-containerregistry reads
// the archive again for each).
func LinkChainDockerArchive(dir string, n int) (string, error) {
	file := filepath.Join(dir, "chain.tar")
	f, err := os.Create(file)
	if err != nil {
		return "", err
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	if err := dockerArchiveHead(tw, "l0"); err != nil {
		return "", err
	}
	for i := range n {
		if err := tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("l%d", i), Linkname: fmt.Sprintf("l%d", i+1), Typeflag: tar.TypeSymlink, Mode: 0o777}); err != nil {
			return "", err
		}
	}
	last := "not a tar"
	if err := tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("l%d", n), Mode: 0o644, Size: int64(len(last)), Typeflag: tar.TypeReg}); err != nil {
		return "", err
	}
	if _, err := io.WriteString(tw, last); err != nil {
		return "", err
	}
	if err := tw.Close(); err != nil {
		return "", err
	}
	return file, f.Close()
}
