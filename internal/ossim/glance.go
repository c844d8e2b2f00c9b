package ossim

import (
	"net/http"
	"sort"
	"strconv"
)

// Glance v2: just what Heat's glance client plugin and gophercloud need to
// resolve an image name to its id and back (image list with filters, show,
// the image schema glanceclient builds its model from). Images are
// Options.Images, or — when that is empty — any name asked for, recorded on
// first lookup under a stable id (imageID).

// rememberImage records name under its id (s.mu held) and returns the id.
func (s *Sim) rememberImage(name string) string {
	id := imageID(name)
	if s.images == nil {
		s.images = map[string]string{}
	}
	s.images[id] = name
	return id
}

// imageName resolves an image reference (id or name) to its name; ok is
// false when no such image exists (s.mu held).
func (s *Sim) imageName(ref string) (string, bool) {
	if n, ok := s.images[ref]; ok {
		return n, true
	}
	for _, n := range s.opts.Images {
		if n == ref || imageID(n) == ref {
			return n, true
		}
	}
	if len(s.opts.Images) > 0 || ref == "" {
		return "", false
	}
	return ref, true
}

func (s *Sim) imageJSON(id, name string) map[string]any {
	t := "2026-01-01T00:00:00Z"
	return map[string]any{"id": id, "name": name, "status": "active", "visibility": "public", "protected": false,
		"os_hidden": false, "disk_format": "qcow2", "container_format": "bare", "min_disk": 0, "min_ram": 0,
		"size": 658505728, "virtual_size": 2361393152, "checksum": randomHexFor(id, 16), "os_hash_algo": "sha512",
		"os_hash_value": randomHexFor(id, 64), "owner": s.accounts[0].ProjectID, "tags": []any{},
		"created_at": t, "updated_at": t, "self": "/v2/images/" + id, "file": "/v2/images/" + id + "/file",
		"schema": "/v2/schemas/image"}
}

// randomHexFor is a stable hex string of n digits derived from seed.
func randomHexFor(seed string, n int) string {
	out := []byte{}
	for i := 0; len(out) < n; i++ {
		out = append(out, imageID(seed + strconv.Itoa(i))[:8]...)
	}
	return string(out[:n])
}

// imageSchema is the part of Glance's image schema glanceclient's warlock
// model needs: the core properties, anything else as strings.
var imageSchema = map[string]any{
	"name": "image", "additionalProperties": map[string]any{"type": "string"},
	"links": []any{map[string]any{"href": "{self}", "rel": "self"}, map[string]any{"href": "{file}", "rel": "enclosure"},
		map[string]any{"href": "{schema}", "rel": "describedby"}},
	"properties": map[string]any{
		"id":               map[string]any{"type": "string"},
		"name":             map[string]any{"type": []any{"null", "string"}},
		"status":           map[string]any{"type": "string"},
		"visibility":       map[string]any{"type": "string"},
		"protected":        map[string]any{"type": "boolean"},
		"os_hidden":        map[string]any{"type": "boolean"},
		"checksum":         map[string]any{"type": []any{"null", "string"}},
		"os_hash_algo":     map[string]any{"type": []any{"null", "string"}},
		"os_hash_value":    map[string]any{"type": []any{"null", "string"}},
		"owner":            map[string]any{"type": []any{"null", "string"}},
		"size":             map[string]any{"type": []any{"null", "integer"}},
		"virtual_size":     map[string]any{"type": []any{"null", "integer"}},
		"min_ram":          map[string]any{"type": "integer"},
		"min_disk":         map[string]any{"type": "integer"},
		"container_format": map[string]any{"type": []any{"null", "string"}},
		"disk_format":      map[string]any{"type": []any{"null", "string"}},
		"created_at":       map[string]any{"type": "string"},
		"updated_at":       map[string]any{"type": "string"},
		"tags":             map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
		"direct_url":       map[string]any{"type": "string"},
		"locations":        map[string]any{"type": "array"},
		"self":             map[string]any{"type": "string"},
		"file":             map[string]any{"type": "string"},
		"schema":           map[string]any{"type": "string"},
	},
}

func glanceErr(w http.ResponseWriter, code int, msg string) {
	title := http.StatusText(code)
	w.Header().Set("Content-Type", "text/plain; charset=UTF-8")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(strconv.Itoa(code) + " " + title + "\n\n" + msg + "\n\n   "))
}

func (s *Sim) serveGlance(w http.ResponseWriter, r *http.Request) {
	base := s.baseURL(r)
	segs := pathSegments(r.URL.Path, "/image")
	if len(segs) == 0 {
		writeJSON(w, http.StatusMultipleChoices, map[string]any{"versions": []any{map[string]any{"id": "v2.16", "status": "CURRENT",
			"links": []any{map[string]any{"rel": "self", "href": base + "/image/v2/"}}}}})
		return
	}
	if segs[0] != "v2" {
		glanceErr(w, 404, "The resource could not be found.")
		return
	}
	if _, ok := s.authenticate(w, r); !ok {
		return
	}
	segs = segs[1:]
	switch {
	case len(segs) == 2 && segs[0] == "schemas" && segs[1] == "image":
		writeJSON(w, http.StatusOK, imageSchema)
	case len(segs) == 2 && segs[0] == "schemas" && segs[1] == "images":
		writeJSON(w, http.StatusOK, map[string]any{"name": "images", "properties": map[string]any{
			"images": map[string]any{"type": "array", "items": imageSchema}, "schema": map[string]any{"type": "string"},
			"first": map[string]any{"type": "string"}, "next": map[string]any{"type": "string"}}})
	case len(segs) == 1 && segs[0] == "images" && r.Method == http.MethodGet:
		q := r.URL.Query()
		s.mu.Lock()
		if n := q.Get("name"); n != "" {
			if name, ok := s.imageName(n); ok && name == n {
				s.rememberImage(n)
			}
		}
		for _, n := range s.opts.Images {
			s.rememberImage(n)
		}
		var ids []string
		for id, n := range s.images {
			if v := q.Get("name"); v != "" && v != n {
				continue
			}
			if v := q.Get("id"); v != "" && v != id {
				continue
			}
			ids = append(ids, id)
		}
		sort.Strings(ids)
		list := make([]any, 0, len(ids))
		for _, id := range ids {
			list = append(list, s.imageJSON(id, s.images[id]))
		}
		s.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]any{"images": list, "schema": "/v2/schemas/images", "first": "/v2/images"})
	case len(segs) == 2 && segs[0] == "images" && r.Method == http.MethodGet:
		s.mu.Lock()
		for _, n := range s.opts.Images {
			s.rememberImage(n)
		}
		name, ok := s.images[segs[1]]
		s.mu.Unlock()
		if !ok {
			glanceErr(w, 404, "No image found with ID "+segs[1])
			return
		}
		writeJSON(w, http.StatusOK, s.imageJSON(segs[1], name))
	default:
		glanceErr(w, 404, "The resource could not be found.")
	}
}
