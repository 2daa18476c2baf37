package console

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func get(t *testing.T, method, target string, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	Handler().ServeHTTP(rec, req)
	return rec
}

// The application page and its modules are served with the types browsers
// require (a module with any other type is refused), and every answer,
// errors included, carries the self-only Content-Security-Policy.
func TestServesAssetsWithTypesAndPolicy(t *testing.T) {
	t.Parallel()
	for path, want := range map[string]string{
		"/ui/":            "text/html; charset=utf-8",
		"/ui/js/main.js":  "text/javascript; charset=utf-8",
		"/ui/js/sse.js":   "text/javascript; charset=utf-8",
		"/ui/app.css":     "text/css; charset=utf-8",
		"/ui/favicon.svg": "image/svg+xml",
	} {
		rec := get(t, http.MethodGet, path)
		require.Equal(t, http.StatusOK, rec.Code, path)
		require.Equal(t, want, rec.Header().Get("Content-Type"), path)
		require.Equal(t, ContentSecurityPolicy, rec.Header().Get("Content-Security-Policy"), path)
		require.Equal(t, "nosniff", rec.Header().Get("X-Content-Type-Options"), path)
		require.NotEmpty(t, rec.Header().Get("ETag"), path)
	}
	require.Contains(t, get(t, http.MethodGet, "/ui/").Body.String(), `<script type="module" src="js/main.js">`)
	missing := get(t, http.MethodGet, "/ui/nope.js")
	require.Equal(t, http.StatusNotFound, missing.Code)
	require.Equal(t, ContentSecurityPolicy, missing.Header().Get("Content-Security-Policy"))
}

func TestRedirectsMethodsAndRevalidation(t *testing.T) {
	t.Parallel()
	rec := get(t, http.MethodGet, "/ui?x=1")
	require.Equal(t, http.StatusMovedPermanently, rec.Code)
	require.Equal(t, "/ui/?x=1", rec.Header().Get("Location"))

	rec = get(t, http.MethodPost, "/ui/")
	require.Equal(t, http.StatusMethodNotAllowed, rec.Code)
	require.Equal(t, "GET, HEAD", rec.Header().Get("Allow"))

	first := get(t, http.MethodGet, "/ui/js/api.js")
	require.Equal(t, "no-cache", first.Header().Get("Cache-Control"))
	again := get(t, http.MethodGet, "/ui/js/api.js", "If-None-Match", first.Header().Get("ETag"))
	require.Equal(t, http.StatusNotModified, again.Code)

	head := get(t, http.MethodHead, "/ui/app.css")
	require.Equal(t, http.StatusOK, head.Code)
	require.Empty(t, head.Body.String())
}

// The policy forbids what the assets must never do anyway; this keeps them
// honest without a browser: no address of another origin, no inline
// script or style, no markup built from strings.
func TestAssetsStayWithinThePolicy(t *testing.T) {
	t.Parallel()
	external := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}`)
	checked := 0
	err := fs.WalkDir(assets, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := assets.ReadFile(p)
		require.NoError(t, err)
		src := string(b)
		// The SVG namespace is a name, not a fetch.
		src = strings.ReplaceAll(src, "http://www.w3.org/2000/svg", "")
		for _, m := range external.FindAllString(src, -1) {
			// Placeholders in form fields show an example address.
			if !strings.Contains(m, "example.com") {
				t.Errorf("%s refers to another origin: %s", p, m)
			}
		}
		for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "style=\"", "<script>", "onclick=\""} {
			if strings.Contains(src, bad) {
				t.Errorf("%s contains %s", p, bad)
			}
		}
		checked++
		return nil
	})
	require.NoError(t, err)
	require.Greater(t, checked, 10)
}

func TestEveryAssetHasAType(t *testing.T) {
	t.Parallel()
	h := Handler().(*handler)
	require.Contains(t, h.files, "index.html")
	require.Contains(t, h.files, "js/pages/timeline.js")
}
