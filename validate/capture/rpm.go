package capture

import (
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	rpmdb "github.com/knqyf263/go-rpmdb/pkg"
	// The "sqlite" database/sql driver go-rpmdb opens rpmdb.sqlite with:
	// pure Go, as trivy registers it.
	_ "modernc.org/sqlite"
)

// reRPMDB are the rpm database's files: SQLite (rpm 4.16+, Fedora 33+,
// RHEL 9), NDB (SUSE) and Berkeley DB (RHEL 8 and older), where rpm
// keeps them (/var/lib/rpm; /usr/lib/sysimage/rpm on newer Fedora and
// SUSE).
var reRPMDB = regexp.MustCompile(`^(?:var/lib/rpm|usr/lib/sysimage/rpm)/(rpmdb\.sqlite|Packages\.db|Packages)$`)

// maxRPMDB bounds the rpm database the capture copies out of a layer:
// go-rpmdb opens a file by path (SQLite reads it at random), so the one
// database of the newest layer is spooled to a temporary file, removed
// when Collect returns. A fat Fedora's is tens of MB.
const maxRPMDB = 512 << 20

// rpmFile is one spooled rpm database.
type rpmFile struct {
	tmp   string
	layer int
	rank  int // the index of its name in rpmPreference
}

// rpmPreference orders the database formats when one layer has several.
var rpmPreference = []string{"rpmdb.sqlite", "Packages.db", "Packages"}

// spoolRPMDB copies the database r of layer into a temporary file and
// keeps it if it is the newest seen.
func (c *collector) spoolRPMDB(name string, r io.Reader, layer int) error {
	f, err := os.CreateTemp("", "gpuimg-rpmdb-*")
	if err != nil {
		return fmt.Errorf("spool the rpm database: %w", err)
	}
	n, err := io.Copy(f, io.LimitReader(r, maxRPMDB+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && n > maxRPMDB {
		err = fmt.Errorf("the rpm database %s is over %d MiB (the capture's bound; docs/faults.md)", name, maxRPMDB>>20)
	}
	if err != nil {
		os.Remove(f.Name())
		return err
	}
	rf := rpmFile{tmp: f.Name(), layer: layer, rank: slices.Index(rpmPreference, name)}
	c.locked(func() {
		old := c.rpm
		if old.tmp == "" || layer > old.layer || layer == old.layer && rf.rank < old.rank {
			c.rpm, old = rf, c.rpm
		} else {
			old = rf
		}
		if old.tmp != "" {
			os.Remove(old.tmp)
		}
	})
	return nil
}

// close removes what the collector spooled.
func (c *collector) close() {
	if c.rpm.tmp != "" {
		os.Remove(c.rpm.tmp)
	}
}

// rpmPackages reads the spooled rpm database with go-rpmdb (the library
// trivy reads it with). A package is manual when no other installed
// package requires its name or anything it provides: rpm keeps no mark of
// what was asked for (dnf's history does, in a database of its own), so,
// as for dpkg without apt's marks, a leaf is what someone installed.
// gpg-pubkey entries (imported signing keys) are not packages.
func rpmPackages(file string) ([]OSPackage, error) {
	db, err := rpmdb.Open(file)
	if err != nil {
		return nil, fmt.Errorf("open the rpm database: %w", err)
	}
	defer db.Close()
	pkgs, err := db.ListPackages()
	if err != nil {
		return nil, fmt.Errorf("read the rpm database: %w", err)
	}
	required := map[string]bool{}
	for _, p := range pkgs {
		for _, r := range p.Requires {
			required[capability(r)] = true
		}
	}
	var out []OSPackage
	for _, p := range pkgs {
		if p.Name == "gpg-pubkey" {
			continue
		}
		manual := !required[p.Name]
		for _, pr := range p.Provides {
			if required[capability(pr)] {
				manual = false
			}
		}
		out = append(out, OSPackage{Name: p.Name, Version: evr(p), Manual: manual, Manager: "rpm"})
	}
	slices.SortFunc(out, func(a, b OSPackage) int { return strings.Compare(a.Name, b.Name) })
	return slices.CompactFunc(out, func(a, b OSPackage) bool { return a.Name == b.Name && a.Version == b.Version }), nil
}

// capability is a Requires or Provides entry without its version
// ("python3-libs(x86-64) = 3.9.16-1.el9" → "python3-libs(x86-64)").
func capability(s string) string {
	name, _, _ := strings.Cut(s, " ")
	return name
}

// evr is rpm's [EPOCH:]VERSION-RELEASE.
func evr(p *rpmdb.PackageInfo) string {
	v := p.Version + "-" + p.Release
	if p.Epoch != nil && *p.Epoch != 0 {
		v = strconv.Itoa(*p.Epoch) + ":" + v
	}
	return v
}
