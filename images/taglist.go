package images

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/gpuimg/gpuimg/internal/bound"
)

// Bounds on a repository's tag list (docs/faults.md): a registry that
// links a page to itself, or sends tags without end, is refused instead
// of read into memory.
const (
	// maxTagPages is how many pages of /tags/list one listing reads.
	maxTagPages = 1000
	// maxTagListBytes is how many bytes all pages together may hold
	// (nvidia/cuda's 4,000-odd tags take about 200 KiB).
	maxTagListBytes = 32 << 20
)

// listTags reads /v2/<repo>/tags/list page by page, following Link
// rel="next" on the same registry, within maxTagPages and maxTagListBytes;
// a page linking to one already read is refused.
func listTags(ctx context.Context, o *options, repo name.Repository) ([]string, error) {
	client, err := o.client(ctx, repo, repo.Scope(transport.PullScope))
	if err != nil {
		return nil, err
	}
	next := (&url.URL{Scheme: repo.Scheme(), Host: repo.RegistryStr(), Path: "/v2/" + repo.RepositoryStr() + "/tags/list"}).String()
	seen := map[string]bool{}
	budget := int64(maxTagListBytes)
	tags := []string{}
	for pages := 0; next != ""; pages++ {
		if pages == maxTagPages {
			return nil, fmt.Errorf("tag list: %w: more than %d pages (the limit is fixed)", ErrBound, maxTagPages)
		}
		if seen[next] {
			return nil, fmt.Errorf("tag list: %w: page %d links back to %s, a page already read (the registry paginates in a loop)", ErrBound, pages+1, redactURL(next))
		}
		seen[next] = true
		var page []string
		page, next, err = tagPage(ctx, client, repo, next, &budget)
		if err != nil {
			return nil, err
		}
		tags = append(tags, page...)
	}
	return tags, nil
}

// tagPage reads one page, taking its bytes from budget, and returns its
// tags and the next page's URL ("" for the last).
func tagPage(ctx context.Context, client *http.Client, repo name.Repository, u string, budget *int64) ([]string, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	if err := transport.CheckError(resp, http.StatusOK); err != nil {
		return nil, "", err
	}
	body, err := bound.ReadAll(resp.Body, "tag list", *budget)
	if errors.Is(err, bound.ErrBound) {
		return nil, "", fmt.Errorf("tag list: %w: the pages hold more than %d MiB (the limit is fixed)", ErrBound, maxTagListBytes>>20)
	}
	if err != nil {
		return nil, "", fmt.Errorf("read tag list: %w", err)
	}
	*budget -= int64(len(body))
	var parsed struct {
		Tags []string `json:"tags"`
	}
	if err := json.Unmarshal(body, &parsed); err != nil {
		return nil, "", fmt.Errorf("read tag list: %w", err)
	}
	next, err := nextPage(resp, repo)
	return parsed.Tags, next, err
}

// nextPage is the URL of a Link: <URL>; rel="next" header, resolved
// against the request, on the repository's registry only.
func nextPage(resp *http.Response, repo name.Repository) (string, error) {
	link := resp.Header.Get("Link")
	if link == "" {
		return "", nil
	}
	start, end := strings.Index(link, "<"), strings.Index(link, ">")
	if start != 0 || end < 0 {
		return "", fmt.Errorf("tag list: a Link header that is not <URL>; rel=\"next\": %s", bound.Quote(link))
	}
	if end == 1 {
		return "", nil
	}
	lu, err := url.Parse(link[1:end])
	if err != nil {
		return "", fmt.Errorf("tag list: Link header: %w", err)
	}
	lu = resp.Request.URL.ResolveReference(lu)
	if lu.Host != repo.RegistryStr() || lu.Scheme != repo.Scheme() {
		return "", fmt.Errorf("tag list: the next page %s is on another registry than %s; refused", redactURL(lu.String()), repo.RegistryStr())
	}
	return lu.String(), nil
}

// redactURL is u without its user information, quoted short.
func redactURL(u string) string {
	if p, err := url.Parse(u); err == nil {
		u = p.Redacted()
	}
	return bound.Quote(u)
}
