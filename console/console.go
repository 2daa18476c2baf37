// Package console is the operator and tenant web console that `compute
// serve` offers at /ui/: a small single-page application of hand-written
// ES modules, CSS and an icon, embedded in the binary so that there is no
// build step and no file to deploy beside it (docs/decisions/0005-console.md).
//
// The console holds no data and no privilege of its own. Its pages run in
// the browser and read the public API (/v1/...) and the event stream with
// the bearer token the user signs in with, so every rule of the API — roles,
// tenant scoping, idempotency — holds in the console because it holds in the
// API. This package therefore imports nothing of the control plane: it only
// serves files, with a Content-Security-Policy that allows nothing but this
// origin, so a page cannot load or send anything elsewhere.
package console

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"
)

// Prefix is where the console is mounted. Handler serves the paths under
// it and redirects the bare Prefix without its slash to it.
const Prefix = "/ui/"

// ContentSecurityPolicy is sent with every console response: scripts,
// styles, images and API calls from this origin only, no plugins, no
// framing, no <base> and no form posts. The pages set no inline script or
// style attribute, so 'unsafe-inline' is never needed.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

//go:embed assets
var assets embed.FS

// contentTypes are the types of the files the console ships, by extension.
// They are fixed here rather than taken from the mime package, which reads
// the host's mime.types: a host that maps .js to text/plain would stop
// browsers from running the ES modules (they require a JavaScript type).
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
}

// file is one embedded asset, ready to serve.
type file struct {
	body        []byte
	contentType string
	etag        string
}

// handler serves the embedded assets.
type handler struct {
	files map[string]file // by path relative to assets/, "index.html" for the root
}

// Handler serves the console under Prefix: the application at Prefix, its
// assets below it, a redirect from "/ui" to "/ui/", 404 for anything else
// and 405 for methods other than GET and HEAD. It panics when an embedded
// file has a type contentTypes does not know: that is a build mistake,
// caught by the package's tests.
func Handler() http.Handler {
	h := &handler{files: map[string]file{}}
	err := fs.WalkDir(assets, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		ct, ok := contentTypes[path.Ext(p)]
		if !ok {
			return fmt.Errorf("console: no content type for %s", p)
		}
		body, err := assets.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		h.files[strings.TrimPrefix(p, "assets/")] = file{body: body, contentType: ct,
			etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
		return nil
	})
	if err != nil {
		panic(err)
	}
	return h
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	hdr.Set("Content-Security-Policy", ContentSecurityPolicy)
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Referrer-Policy", "no-referrer")
	hdr.Set("X-Frame-Options", "DENY")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		hdr.Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if r.URL.Path == strings.TrimSuffix(Prefix, "/") {
		target := Prefix
		if r.URL.RawQuery != "" {
			target += "?" + r.URL.RawQuery
		}
		http.Redirect(w, r, target, http.StatusMovedPermanently)
		return
	}
	rel, ok := strings.CutPrefix(r.URL.Path, Prefix)
	if !ok {
		http.NotFound(w, r)
		return
	}
	if rel == "" {
		rel = "index.html"
	}
	f, ok := h.files[rel]
	if !ok {
		http.NotFound(w, r)
		return
	}
	hdr.Set("Content-Type", f.contentType)
	hdr.Set("ETag", f.etag)
	// Revalidate every time: the assets change with the binary, and a
	// stale module mixed with fresh ones would break the application. The
	// ETag makes the check a 304.
	hdr.Set("Cache-Control", "no-cache")
	http.ServeContent(w, r, rel, time.Time{}, bytes.NewReader(f.body))
}
