package upstream

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/gpuimg/gpuimg/internal/bound"
)

// maxBody caps what one response may hold: the real torch page (every
// wheel of every variant) is a few MiB; metadata files are kilobytes.
const maxBody = 64 << 20

// FormatError says an upstream document could not be read as the format
// it should have. It never becomes a row.
type FormatError struct {
	URL string
	Err error
}

func (e *FormatError) Error() string { return fmt.Sprintf("read %s: %v", e.URL, e.Err) }
func (e *FormatError) Unwrap() error { return e.Err }

// ErrHashMismatch is wrapped by IntegrityError.
var ErrHashMismatch = errors.New("sha256 does not match the index page")

// IntegrityError says a metadata file's sha256 differs from the value the
// index page gives in data-core-metadata / data-dist-info-metadata. It
// never becomes a row.
type IntegrityError struct {
	URL       string
	Want, Got string
}

func (e *IntegrityError) Error() string {
	return fmt.Sprintf("verify %s: %v (page says sha256=%s, file has sha256=%s)", e.URL, ErrHashMismatch, e.Want, e.Got)
}
func (e *IntegrityError) Unwrap() error { return ErrHashMismatch }

// get fetches u and returns its body. A non-200 status is an error naming
// the URL.
func (o *options) get(ctx context.Context, u, accept string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", u, err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	req.Header.Set("User-Agent", o.userAgent)
	resp, err := o.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("get %s: %s", u, resp.Status)
	}
	b, err := bound.ReadAll(resp.Body, "the response", maxBody)
	if errors.Is(err, bound.ErrBound) {
		return nil, &FormatError{URL: u, Err: fmt.Errorf("response is larger than %d MiB", maxBody>>20)}
	}
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", u, err)
	}
	return b, nil
}

// getJSON fetches u and decodes it into v.
func (o *options) getJSON(ctx context.Context, u string, v any) error {
	b, err := o.get(ctx, u, "application/json")
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return &FormatError{URL: u, Err: fmt.Errorf("not the expected JSON: %w", err)}
	}
	return nil
}

// getVerified fetches u and checks its sha256 against want (lowercase
// hex). An empty want means the page gave no hash; the file is read
// unverified.
func (o *options) getVerified(ctx context.Context, u, want string) ([]byte, error) {
	b, err := o.get(ctx, u, "")
	if err != nil {
		return nil, err
	}
	if want != "" {
		sum := sha256.Sum256(b)
		if got := hex.EncodeToString(sum[:]); got != strings.ToLower(want) {
			return nil, &IntegrityError{URL: u, Want: want, Got: got}
		}
	}
	return b, nil
}
