package testenv

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"html"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Wheel writes a small but valid wheel for dist==version into dir, named as
// the real one would be (torch-2.3.1+cu121-cp311-cp311-linux_x86_64.whl),
// holding files (path → content; a "NAME-VERSION.dist-info/METADATA"
// there replaces the generated one) and its dist-info, and returns its path.
// tag is the wheel tag (py3-none-any, cp311-cp311-linux_x86_64).
func Wheel(dir, dist, version, tag string, files map[string]string) (string, error) {
	norm := strings.ReplaceAll(dist, "-", "_")
	fname := fmt.Sprintf("%s-%s-%s.whl", norm, version, tag)
	info := fmt.Sprintf("%s-%s.dist-info", norm, version)
	all := maps.Clone(files)
	if all == nil {
		all = map[string]string{}
	}
	if _, ok := all[info+"/METADATA"]; !ok { // files may bring their own (Requires-Dist)
		all[info+"/METADATA"] = fmt.Sprintf("Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: gpuimg test fixture standing in for %s\n", dist, version, dist)
	}
	all[info+"/WHEEL"] = fmt.Sprintf("Wheel-Version: 1.0\nGenerator: gpuimg-testenv\nRoot-Is-Purelib: %v\nTag: %s\n", strings.HasSuffix(tag, "-any"), tag)
	names := slices.Sorted(maps.Keys(all))
	var record strings.Builder
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	mod := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, n := range names {
		h := &zip.FileHeader{Name: n, Method: zip.Deflate, Modified: mod}
		if strings.Contains(n, "/bin/") {
			h.SetMode(0o755) // pip keeps the executable bits (nvidia/cuda_nvcc/bin/ptxas)
		}
		w, err := zw.CreateHeader(h)
		if err != nil {
			return "", err
		}
		if _, err := w.Write([]byte(all[n])); err != nil {
			return "", err
		}
		sum := sha256.Sum256([]byte(all[n]))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", n, base64.RawURLEncoding.EncodeToString(sum[:]), len(all[n]))
	}
	fmt.Fprintf(&record, "%s/RECORD,,\n", info)
	w, err := zw.CreateHeader(&zip.FileHeader{Name: info + "/RECORD", Method: zip.Deflate, Modified: mod})
	if err != nil {
		return "", err
	}
	if _, err := w.Write([]byte(record.String())); err != nil {
		return "", err
	}
	if err := zw.Close(); err != nil {
		return "", err
	}
	p := filepath.Join(dir, fname)
	return p, os.WriteFile(p, buf.Bytes(), 0o644)
}

// Index is a PEP 503 simple repository serving the wheels in a directory,
// on 127.0.0.1.
type Index struct {
	// URL is the index URL for pip's --index-url (…/simple/).
	URL string
	srv *http.Server
}

var normRE = regexp.MustCompile(`[-_.]+`)

func normalize(n string) string { return strings.ToLower(normRE.ReplaceAllString(n, "-")) }

// ServeIndex serves dir as a PEP 503 index until Close.
func ServeIndex(dir string) (*Index, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	projects := func() (map[string][]string, error) {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return nil, err
		}
		out := map[string][]string{}
		for _, e := range entries {
			if !strings.HasSuffix(e.Name(), ".whl") {
				continue
			}
			dist, _, _ := strings.Cut(e.Name(), "-")
			out[normalize(dist)] = append(out[normalize(dist)], e.Name())
		}
		return out, nil
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/simple/", func(w http.ResponseWriter, r *http.Request) {
		ps, err := projects()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		proj := strings.Trim(strings.TrimPrefix(r.URL.Path, "/simple/"), "/")
		if proj == "" {
			names := slices.Sorted(maps.Keys(ps))
			fmt.Fprint(w, "<!DOCTYPE html><html><body>\n")
			for _, n := range names {
				fmt.Fprintf(w, "<a href=\"%s/\">%s</a>\n", n, n)
			}
			fmt.Fprint(w, "</body></html>\n")
			return
		}
		files, ok := ps[normalize(proj)]
		if !ok {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, "<!DOCTYPE html><html><body>\n")
		for _, f := range files {
			b, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			sum := sha256.Sum256(b)
			fmt.Fprintf(w, "<a href=\"/files/%s#sha256=%s\">%s</a>\n", strings.ReplaceAll(f, "+", "%2B"), hex.EncodeToString(sum[:]), html.EscapeString(f))
		}
		fmt.Fprint(w, "</body></html>\n")
	})
	mux.Handle("/files/", http.StripPrefix("/files/", http.FileServer(http.Dir(dir))))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	return &Index{URL: "http://" + l.Addr().String() + "/simple/", srv: srv}, nil
}

// Close stops the index server.
func (i *Index) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return i.srv.Shutdown(ctx)
}
