package api

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/secrets"
	"github.com/mini-vnfm/mini-vnfm/internal/sol013"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
)

// Complex attributes left out unless asked for (SOL003 exclude_default).
var (
	instanceDefaultExcluded = [][]string{{"vnfConfigurableProperties"}, {"vimConnectionInfo"}, {"instantiatedVnfInfo"}, {"metadata"}, {"extensions"}}
	opDefaultExcluded       = [][]string{{"operationParams"}, {"error"}, {"resourceChanges"}, {"changedInfo"}, {"changedExtConnectivity"}, {"progress"}}
)

func (a *API) href(path string) map[string]string {
	return map[string]string{"href": a.base + path}
}

// toDoc converts a value to a generic JSON document with every secret masked:
// this is the only way resources leave the server.
func toDoc(v any) map[string]any {
	doc, err := secrets.Generic(v)
	if err != nil {
		panic(fmt.Sprintf("api: marshal %T: %v", v, err))
	}
	out, _ := secrets.MaskDoc(doc).(map[string]any)
	return out
}

func (a *API) instanceDoc(in *store.Instance) map[string]any {
	doc := toDoc(in.VnfInstance)
	doc["_links"] = a.instanceLinks(in.ID, in.InstantiationState)
	return doc
}

func (a *API) instanceLinks(id, state string) map[string]any {
	p := "/vnflcm/v1/vnf_instances/" + id
	links := map[string]any{"self": a.href(p)}
	if state == model.Instantiated {
		links["terminate"] = a.href(p + "/terminate")
		links["scale"] = a.href(p + "/scale")
		links["heal"] = a.href(p + "/heal")
		links["changeExtConn"] = a.href(p + "/change_ext_conn")
	} else {
		links["instantiate"] = a.href(p + "/instantiate")
	}
	return links
}

// appendLinks adds _links (as instanceLinks makes them, keys in the order
// encoding/json gives) to a rendered instance document, a JSON object,
// without decoding it: in place, doc's array is reused when it has room.
// id is the instance's uuid as the store reads it.
func (a *API) appendLinks(doc []byte, id, state string) ([]byte, error) {
	doc = bytes.TrimRight(doc, " \t\r\n")
	if len(doc) < 2 || doc[0] != '{' || doc[len(doc)-1] != '}' || !store.IsUUIDText(id) {
		return nil, fmt.Errorf("api: the rendered document of VNF instance %s is not a JSON object", id)
	}
	out := doc[:len(doc)-1]
	if len(doc) > 2 {
		out = append(out, ',')
	}
	out = append(out, `"_links":{`...)
	link := func(name, suffix string, last bool) {
		out = append(out, '"')
		out = append(out, name...)
		out = append(out, `":{"href":`...)
		out = append(out, a.instHref...) // quoted base, no closing quote
		out = append(out, id...)
		out = append(out, suffix...)
		out = append(out, `"}`...)
		if !last {
			out = append(out, ',')
		}
	}
	if state == model.Instantiated {
		link("changeExtConn", "/change_ext_conn", false)
		link("heal", "/heal", false)
		link("scale", "/scale", false)
		link("self", "", false)
		link("terminate", "/terminate", true)
	} else {
		link("instantiate", "/instantiate", false)
		link("self", "", true)
	}
	return append(out, "}}"...), nil
}

func (a *API) opDoc(op *store.OpOcc, journal []store.JournalEntry) map[string]any {
	v := op.VnfLcmOpOcc
	if len(v.OperationParams) == 0 {
		v.OperationParams = json.RawMessage("{}")
	}
	v.Progress = progressOf(journal)
	doc := toDoc(v)
	p := "/vnflcm/v1/vnf_lcm_op_occs/" + op.ID
	links := map[string]any{"self": a.href(p), "vnfInstance": a.href("/vnflcm/v1/vnf_instances/" + op.VnfInstanceID)}
	switch op.OperationState {
	case model.StateFailedTemp:
		links["retry"] = a.href(p + "/retry")
		links["rollback"] = a.href(p + "/rollback")
		links["fail"] = a.href(p + "/fail")
	case model.StateStarting, model.StateProcessing, model.StateRollingBack:
		links["cancel"] = a.href(p + "/cancel")
	}
	doc["_links"] = links
	return doc
}

// progressOf folds the journal into the progress extension: the latest phase
// (a rollback after a run) is what a poller cares about.
func progressOf(entries []store.JournalEntry) *model.Progress {
	if len(entries) == 0 {
		return nil
	}
	phase := store.PhaseRun
	for _, e := range entries {
		if e.Phase == store.PhaseRollback {
			phase = store.PhaseRollback
		}
	}
	p := &model.Progress{Steps: []model.StepProgress{}}
	idx := map[string]int{}
	for _, e := range entries {
		if e.Phase != phase {
			continue
		}
		i, ok := idx[e.Step]
		if !ok {
			i = len(p.Steps)
			idx[e.Step] = i
			p.Steps = append(p.Steps, model.StepProgress{Name: e.Step, State: model.StepPending})
		}
		s := &p.Steps[i]
		if e.Node == "" {
			s.State, s.Attempt, s.StartTime, s.EndTime, s.Error = e.State, e.Attempt, e.StartTime, e.EndTime, e.Error
			if phase == store.PhaseRollback && e.State == model.StepCompleted {
				s.State = model.StepRolledBack
			}
		} else {
			s.Nodes = append(s.Nodes, model.NodeProgress{Name: e.Node, State: e.State, Message: e.Message, StartTime: e.StartTime, EndTime: e.EndTime})
			s.NodesTotal++
			if e.State == model.StepCompleted {
				s.NodesDone++
			}
		}
		for _, t := range []*time.Time{e.StartTime, e.EndTime} {
			if t != nil && (p.UpdatedTime == nil || t.After(*p.UpdatedTime)) {
				p.UpdatedTime = t
			}
		}
	}
	p.StepsTotal = len(p.Steps)
	for _, s := range p.Steps {
		switch s.State {
		case model.StepCompleted, model.StepRolledBack, model.StepSkipped:
			p.StepsDone++
		case model.StepRunning:
			p.CurrentStep = s.Name
		case model.StepFailed:
			p.CurrentStep = s.Name
			p.LastError = s.Error
		}
	}
	return p
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// listQuery holds the parsed query of a list request.
type listQuery struct {
	filter   *sol013.Filter
	selector *sol013.Selector
	after    int64
}

var listParams = []string{"filter", "all_fields", "fields", "exclude_fields", "exclude-fields", "exclude_default", "nextpage_opaque_marker"}

// parseList validates a list request's query: unknown parameters are 400 (the
// TST checks it), as are bad filters, selectors and markers.
func (a *API) parseList(r *http.Request, fields, selectFields *sol013.Field) (*listQuery, error) {
	q := r.URL.Query()
	if err := onlyParams(q, listParams...); err != nil {
		return nil, err
	}
	lq := &listQuery{}
	if fs, ok := q["filter"]; ok {
		if len(fs) != 1 {
			return nil, problemf(http.StatusBadRequest, "give the filter parameter once; join expressions with ';'")
		}
		f, err := sol013.ParseFilter(fs[0])
		if err != nil {
			return nil, err
		}
		if err := f.Validate(fields); err != nil {
			return nil, err
		}
		lq.filter = f
	}
	sel, err := sol013.ParseSelector(q, selectFields)
	if err != nil {
		return nil, err
	}
	if err := complexOnly(sel, selectFields); err != nil {
		return nil, err
	}
	lq.selector = sel
	if m := q.Get("nextpage_opaque_marker"); m != "" {
		after, err := decodeMarker(m)
		if err != nil {
			return nil, problemf(http.StatusBadRequest, "nextpage_opaque_marker is not valid; follow the Link header of the previous page")
		}
		lq.after = after
	}
	return lq, nil
}

// complexOnly enforces SOL013 §5.3 for fields: it names complex attributes
// (objects, arrays); simple ones are always returned, so listing one would
// be a parameter that does nothing. exclude_fields may name simple
// attributes too (NFV-TST 010 7.3.1.1.8 excludes vnfInstanceDescription):
// leaving one out is what the client asked for.
func complexOnly(sel *sol013.Selector, root *sol013.Field) error {
	for _, p := range sel.Fields {
		f, err := root.Lookup(p)
		if err != nil {
			return err
		}
		switch f.Kind {
		case sol013.KindString, sol013.KindNumber, sol013.KindBoolean, sol013.KindDateTime:
			return problemf(http.StatusBadRequest, fmt.Sprintf("fields: %q is a simple attribute, which is always returned; list only complex attributes (objects, arrays) in fields, or leave simple ones out with exclude_fields", strings.Join(p, "/")))
		}
	}
	return nil
}

// unknownKeys lists, sorted, the keys of m that allowed does not hold.
func unknownKeys[V any](m map[string]V, allowed []string) []string {
	var bad []string
	for k := range m {
		if !slices.Contains(allowed, k) {
			bad = append(bad, k)
		}
	}
	slices.Sort(bad)
	return bad
}

func onlyParams(q url.Values, allowed ...string) error {
	bad := unknownKeys(q, allowed)
	if len(bad) == 0 {
		return nil
	}
	hint := "this resource takes no query parameters"
	if len(allowed) > 0 {
		hint = "supported: " + strings.Join(allowed, ", ")
	}
	return problemf(http.StatusBadRequest, fmt.Sprintf("unsupported query parameter(s) %s; %s", strings.Join(bad, ", "), hint))
}

const markerPrefix = "m1."

func encodeMarker(seq int64) string {
	return markerPrefix + base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(seq, 10)))
}

func decodeMarker(s string) (int64, error) {
	if !strings.HasPrefix(s, markerPrefix) {
		return 0, fmt.Errorf("bad marker")
	}
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(s, markerPrefix))
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("bad marker")
	}
	return n, nil
}

// nextLink repeats the request's query (filter, selectors) with the new
// marker: the Tacker CLI keeps only the Link's query string.
func (a *API) nextLink(w http.ResponseWriter, r *http.Request, lastSeq int64) {
	q := r.URL.Query()
	q.Set("nextpage_opaque_marker", encodeMarker(lastSeq))
	w.Header().Set("Link", fmt.Sprintf(`<%s%s?%s>; rel="next"`, a.base, r.URL.Path, q.Encode()))
}
