package ossim

import (
	"net/http"
)

// Cinder: only what Heat asks before it accepts a template with volume
// resources — the version document and the extension list (OS::Cinder::
// VolumeType requires os-types-manage). Volumes themselves are not
// simulated: any other path is 404.

var cinderExtensions = []string{"os-types-manage", "os-types-extra-specs", "os-volume-actions", "os-vol-host-attr",
	"os-extended-snapshot-attributes", "os-volume-type-access", "os-quota-sets", "os-availability-zone"}

func (s *Sim) serveCinder(w http.ResponseWriter, r *http.Request) {
	base := s.baseURL(r)
	segs := pathSegments(r.URL.Path, "/volume")
	v3 := map[string]any{"id": "v3.0", "status": "CURRENT", "version": "3.70", "min_version": "3.0", "updated": "2023-08-31T00:00:00Z",
		"links": []any{map[string]any{"rel": "self", "href": base + "/volume/v3/"}}}
	switch {
	case len(segs) == 0:
		writeJSON(w, http.StatusMultipleChoices, map[string]any{"versions": []any{v3}})
		return
	case segs[0] != "v3":
		keystoneErr(w, http.StatusNotFound, "Not Found", "The resource could not be found.")
		return
	case len(segs) == 1:
		writeJSON(w, http.StatusOK, map[string]any{"version": v3})
		return
	}
	tok, ok := s.authenticate(w, r)
	if !ok {
		return
	}
	segs = segs[1:]
	if len(segs) > 0 && segs[0] == tok.account.ProjectID {
		segs = segs[1:]
	}
	if len(segs) == 1 && segs[0] == "extensions" && r.Method == http.MethodGet {
		list := make([]any, 0, len(cinderExtensions))
		for _, a := range cinderExtensions {
			list = append(list, map[string]any{"alias": a, "name": a, "description": a, "updated": "2013-01-01T00:00:00+00:00", "links": []any{}})
		}
		writeJSON(w, http.StatusOK, map[string]any{"extensions": list})
		return
	}
	keystoneErr(w, http.StatusNotFound, "Not Found", "The simulator does not serve Cinder volumes.")
}
