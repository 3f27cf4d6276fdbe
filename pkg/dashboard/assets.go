package dashboard

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
	"slices"
	"strings"
)

// web holds the page: static files, no data.
//
//go:embed web
var web embed.FS

// ContentSecurityPolicy is sent with every response of the dashboard: its
// own scripts and styles only (no inline code, no other origin), fetches
// to the admin API itself, and no framing.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// secure sets the headers every dashboard response carries.
func secure(h http.Header) {
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
}

// assets maps a path under /ui/ to its file ("" is index.html).
var assets = func() map[string]string {
	m := map[string]string{"": "web/index.html"}
	_ = fs.WalkDir(web, "web", func(p string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			m[strings.TrimPrefix(p, "web/")] = p
		}
		return nil
	})
	return m
}()

// OpenPaths are the request paths of the page shell: static files that
// hold no data, served without the admin token (adminauth.Options.Open).
func OpenPaths() []string {
	out := []string{"/ui"}
	for p := range assets {
		out = append(out, "/ui/"+p)
	}
	slices.Sort(out)
	return out
}

func serveAsset(w http.ResponseWriter, r *http.Request) {
	secure(w.Header())
	name, ok := assets[r.PathValue("file")]
	if !ok {
		http.NotFound(w, r)
		return
	}
	b, err := web.ReadFile(name)
	if err != nil {
		http.Error(w, "asset unreadable", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", contentType(name))
	// Revalidate every time: a new binary serves a new page at once.
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write(b)
}

// contentType is the type of an asset by its extension (not the system's
// MIME table, which may differ between machines).
func contentType(name string) string {
	switch path.Ext(name) {
	case ".html":
		return "text/html; charset=utf-8"
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".svg":
		return "image/svg+xml"
	default:
		return "application/octet-stream"
	}
}
