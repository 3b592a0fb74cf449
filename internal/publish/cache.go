package publish

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"strconv"
	"strings"

	"github.com/moby/buildkit/client"
)

// A registry cache (BuildKit's type=registry) shared by the pool: every
// variant exports its cache to a reference of its own and imports its own
// and those of the variants it shares layers with (same base image and
// Python, the sticky placement's groups), so that whichever builder builds
// a variant (another daemon after a retry, another CI job with --only)
// finds the layers another one built, and no two variants overwrite each
// other's cache manifest.

// groupKey is the key of the variants that share layers (same base image
// and Python): the scheduler's sticky groups and the registry cache's.
func groupKey(v Variant) string { return v.Stack.BaseImage + "|" + v.Stack.Python }

// cacheGroups maps each variant's name to the names of the variants of the
// whole plan (before --only) that share its layers, itself first, then
// the others in plan order.
func cacheGroups(all []Variant) map[string][]string {
	byKey := map[string][]string{}
	for _, v := range all {
		byKey[groupKey(v)] = append(byKey[groupKey(v)], v.Name)
	}
	out := make(map[string][]string, len(all))
	for _, v := range all {
		g := []string{v.Name}
		for _, n := range byKey[groupKey(v)] {
			if n != v.Name {
				g = append(g, n)
			}
		}
		out[v.Name] = g
	}
	return out
}

// variantCaches returns a variant's cache imports and exports from the
// run's (as --cache-from and --cache-to give them, parsed).
// Each type=registry entry with a tagged ref R:T (or R, read as
// R:buildcache) becomes, for an export, R:T-NAME (NAME the variant's
// name) and, for an import, R:T-NAME alone when has says that cache
// exists (has is given the rewritten entry), else one entry per variant
// of the group (its own first). Other entries (type=local, gha, s3, a ref
// by digest) are passed as they are. has may be nil (nothing is known to
// exist).
//
// Why not always the whole group: the group's caches all hold the steps
// its variants share (the base, the venv), and BuildKit matches a step
// found in several imported caches in only one of them (whichever answers
// first; solver.combinedCacheManager.Query keeps the first key of an ID)
// and then looks for the next steps in that one alone. With a group
// mate's cache chosen, the variant's own later steps (its frameworks'
// pip installs) were rebuilt although its own cache held them: 2 of 7
// steps, in about half the runs.
//
// What this gives up: a variant whose own cache exists but is stale (its
// base image moved since it was exported) does not import the fresh
// caches its group mates exported earlier in the same run. Within one run
// that costs nothing, since the scheduler's sticky groups build the mates
// on the same builder, whose local cache holds their layers. Only a
// variant that moved to another builder (a retry, a CI job with --only)
// rebuilds those shared steps once, and exports its own cache fresh.
func variantCaches(from, to []client.CacheOptionsEntry, group []string, has func(client.CacheOptionsEntry) bool) (imports, exports []client.CacheOptionsEntry) {
	for _, e := range from {
		if _, ok := registryCacheRef(e); !ok {
			imports = append(imports, e)
			continue
		}
		own := withCacheTag(e, group[0])
		if has != nil && has(own) {
			imports = append(imports, own)
			continue
		}
		for _, n := range group {
			imports = append(imports, withCacheTag(e, n))
		}
	}
	for _, e := range to {
		exports = append(exports, withCacheTag(e, group[0]))
	}
	return imports, exports
}

// registryCacheRef returns the ref= of a type=registry cache entry.
func registryCacheRef(e client.CacheOptionsEntry) (string, bool) {
	ref := e.Attrs["ref"]
	return ref, e.Type == "registry" && ref != ""
}

// cacheInsecure says whether a cache entry sets registry.insecure=true.
func cacheInsecure(e client.CacheOptionsEntry) bool {
	b, _ := strconv.ParseBool(e.Attrs["registry.insecure"])
	return b
}

// splitCacheTag splits a cache ref R:T into R and T; T is "" when the ref
// has no tag.
func splitCacheTag(ref string) (repo, tag string) {
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		return ref[:i], ref[i+1:]
	}
	return ref, ""
}

// withCacheTag rewrites a type=registry entry's ref R:T to R:T-name; any
// other entry, or a ref by digest, is returned as it is.
func withCacheTag(e client.CacheOptionsEntry, name string) client.CacheOptionsEntry {
	ref, ok := registryCacheRef(e)
	if !ok || strings.Contains(ref, "@") {
		return e
	}
	repo, tag := splitCacheTag(ref)
	if tag == "" {
		tag = "buildcache"
	}
	t := tag + "-" + name
	if len(t) > 128 { // the distribution spec's limit on a tag
		sum := sha256.Sum256([]byte(name))
		t = tag[:min(len(tag), 128-17)] + "-" + hex.EncodeToString(sum[:8])
	}
	e.Attrs = maps.Clone(e.Attrs)
	e.Attrs["ref"] = repo + ":" + t
	return e
}
