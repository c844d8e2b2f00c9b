package ossim

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

var stackNameRE = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_.-]{0,254}$`)

var heatTitles = map[int]string{400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
	405: "Method Not Allowed", 409: "Conflict", 500: "Internal Server Error"}

var heatExplanations = map[int]string{
	400: "The server could not comply with the request since it is either malformed or otherwise incorrect.",
	403: "Access was denied to this resource.",
	404: "The resource could not be found.",
	409: "There was a conflict when trying to complete your request.",
}

func heatErr(w http.ResponseWriter, code int, typ, msg string) {
	writeJSON(w, code, map[string]any{
		"explanation": heatExplanations[code], "code": code, "title": heatTitles[code],
		"error": map[string]any{"message": msg, "traceback": nil, "type": typ},
	})
}

func heatAPIErr(w http.ResponseWriter, err error) {
	if ae, ok := err.(*apiError); ok {
		heatErr(w, ae.code, ae.typ, ae.msg)
		return
	}
	heatErr(w, 500, "InternalServerError", err.Error())
}

func stackNotFound(w http.ResponseWriter, ref string) {
	heatErr(w, 404, "EntityNotFound", fmt.Sprintf("The Stack (%s) could not be found.", ref))
}

func (s *Sim) stackURL(base string, st *stack) string {
	return fmt.Sprintf("%s/v1/%s/stacks/%s/%s", base, st.project, url.PathEscape(st.name), st.id)
}

// lookupStack finds a live stack by name or id (s.mu held).
func (s *Sim) lookupStack(project, ref string) *stack {
	if st := s.stacks[ref]; st != nil && st.project == project && !st.deleted {
		return st
	}
	for _, st := range s.stacks {
		if st.name == ref && st.project == project && !st.deleted {
			return st
		}
	}
	return nil
}

func (s *Sim) serveHeat(w http.ResponseWriter, r *http.Request) {
	tok, ok := s.authenticate(w, r)
	if !ok {
		return
	}
	base := s.baseURL(r)
	segs := pathSegments(r.URL.EscapedPath(), "/v1")
	for i := range segs {
		if u, err := url.PathUnescape(segs[i]); err == nil {
			segs[i] = u
		}
	}
	if len(segs) < 2 {
		heatErr(w, 404, "HTTPNotFound", "The resource could not be found.")
		return
	}
	project := segs[0]
	if project != tok.account.ProjectID {
		heatErr(w, 403, "Forbidden", "You are not authorized to use this project.")
		return
	}
	switch segs[1] {
	case "stacks":
	case "resource_types":
		var types []string
		for t := range resourceTypes {
			types = append(types, t)
		}
		sort.Strings(types)
		writeJSON(w, http.StatusOK, map[string]any{"resource_types": types})
		return
	default:
		heatErr(w, 404, "HTTPNotFound", "The resource could not be found.")
		return
	}
	segs = segs[2:]
	switch {
	case len(segs) == 0 && r.Method == http.MethodGet:
		s.heatListStacks(w, r, project, base)
	case len(segs) == 0 && r.Method == http.MethodPost:
		s.heatCreateStack(w, r, tok, base)
	case len(segs) == 0:
		heatErr(w, 405, "HTTPMethodNotAllowed", "The method is not allowed for the requested URL.")
	case len(segs) == 1 && segs[0] == "preview":
		heatErr(w, 400, "HTTPBadRequest", "Stack preview is not supported by the simulator.")
	case len(segs) == 1 || (len(segs) >= 2 && isStackSubpath(segs[1])):
		// /stacks/{name_or_id}[/{subpath}]: Heat answers with a redirect to
		// the canonical /stacks/{name}/{id}/... URL.
		s.mu.Lock()
		st := s.lookupStack(project, segs[0])
		s.mu.Unlock()
		if st == nil {
			stackNotFound(w, segs[0])
			return
		}
		loc := s.stackURL(base, st)
		if len(segs) > 1 {
			loc += "/" + strings.Join(segs[1:], "/")
		}
		if r.URL.RawQuery != "" {
			loc += "?" + r.URL.RawQuery
		}
		w.Header().Set("Location", loc)
		writeJSON(w, http.StatusFound, map[string]any{"location": loc})
	default:
		s.heatStack(w, r, tok, base, segs)
	}
}

func isStackSubpath(seg string) bool {
	switch seg {
	case "resources", "events", "template", "environment", "files", "outputs", "abandon", "snapshots", "actions":
		return true
	}
	return false
}

func (s *Sim) heatListStacks(w http.ResponseWriter, r *http.Request, project, base string) {
	q := r.URL.Query()
	s.mu.Lock()
	defer s.mu.Unlock()
	var list []*stack
	for _, st := range s.stacks {
		if st.project != project || (st.deleted && q.Get("show_deleted") != "true") || (st.parent != nil && q.Get("show_nested") != "true") {
			continue
		}
		if v := q["name"]; len(v) > 0 && !contains(v, st.name) {
			continue
		}
		if v := q["id"]; len(v) > 0 && !contains(v, st.id) {
			continue
		}
		if v := q["status"]; len(v) > 0 && !contains(v, st.status) && !contains(v, st.action+"_"+st.status) {
			continue
		}
		if v := q["action"]; len(v) > 0 && !contains(v, st.action) {
			continue
		}
		list = append(list, st)
	}
	sort.Slice(list, func(i, j int) bool {
		if !list[i].created.Equal(list[j].created) {
			return list[i].created.After(list[j].created)
		}
		return list[i].id < list[j].id
	})
	if lim, err := strconv.Atoi(q.Get("limit")); err == nil && lim >= 0 && lim < len(list) {
		list = list[:lim]
	}
	out := []any{}
	for _, st := range list {
		out = append(out, s.stackSummary(st, base))
	}
	writeJSON(w, http.StatusOK, map[string]any{"stacks": out})
}

func (s *Sim) stackSummary(st *stack, base string) map[string]any {
	var parent, tags any
	if st.parent != nil {
		parent = st.parent.id
	}
	if len(st.tags) > 0 {
		tags = st.tags
	}
	var deletion any
	if st.deleted {
		deletion = heatTime(st.deletedAt)
	}
	var updated any
	if !st.updated.IsZero() {
		updated = heatTime(st.updated)
	}
	return map[string]any{
		"id": st.id, "stack_name": st.name, "description": st.tmpl.description,
		"stack_status": st.action + "_" + st.status, "stack_status_reason": st.reason,
		"creation_time": heatTime(st.created), "updated_time": updated, "deletion_time": deletion,
		"links":  []any{map[string]any{"href": s.stackURL(base, st), "rel": "self"}},
		"parent": parent, "stack_owner": st.owner, "stack_user_project_id": st.project, "project": st.project, "tags": tags,
	}
}

func (s *Sim) stackDetail(st *stack, base string) map[string]any {
	m := s.stackSummary(st, base)
	params := map[string]any{}
	for k, v := range st.params {
		params[k] = paramString(st.tmpl.params[k], v)
	}
	params["OS::stack_name"] = st.name
	params["OS::stack_id"] = st.id
	params["OS::project_id"] = st.project
	var timeout any
	if st.timeoutMins > 0 {
		timeout = st.timeoutMins
	}
	m["parameters"] = params
	m["outputs"] = s.stackOutputs(st)
	m["disable_rollback"] = st.disableRollback
	m["timeout_mins"] = timeout
	m["template_description"] = st.tmpl.description
	m["capabilities"] = []any{}
	m["notification_topics"] = []any{}
	return m
}

type createBody struct {
	StackName       string         `json:"stack_name"`
	Template        any            `json:"template"`
	TemplateURL     string         `json:"template_url"`
	Files           map[string]any `json:"files"`
	Parameters      map[string]any `json:"parameters"`
	Environment     any            `json:"environment"`
	DisableRollback *bool          `json:"disable_rollback"`
	TimeoutMins     *float64       `json:"timeout_mins"`
	Tags            any            `json:"tags"`
	Existing        bool           `json:"existing"`
	ClearParameters []string       `json:"clear_parameters"`
}

func parseTags(v any) []string {
	switch t := v.(type) {
	case string:
		var out []string
		for _, x := range strings.Split(t, ",") {
			if x = strings.TrimSpace(x); x != "" {
				out = append(out, x)
			}
		}
		return out
	default:
		return stringList(v)
	}
}

func filesOf(in map[string]any) map[string]string {
	out := map[string]string{}
	for k, v := range in {
		out[k] = toString(v)
	}
	return out
}

func (s *Sim) heatCreateStack(w http.ResponseWriter, r *http.Request, tok *token, base string) {
	var b createBody
	if err := readJSON(r, &b); err != nil {
		heatErr(w, 400, "HTTPBadRequest", "The request body must be a JSON object: "+err.Error())
		return
	}
	if !stackNameRE.MatchString(b.StackName) {
		heatErr(w, 400, "StackValidationFailed", fmt.Sprintf("Invalid stack name %s must contain only alphanumeric or \"_-.\" characters, must start with alpha and must be 255 characters or less.", b.StackName))
		return
	}
	if b.Template == nil && b.TemplateURL != "" {
		heatErr(w, 400, "HTTPBadRequest", "template_url is not supported by the simulator; send the template itself.")
		return
	}
	t, err := parseTemplate(b.Template)
	if err != nil {
		heatAPIErr(w, err)
		return
	}
	env, err := loadDocument(b.Environment, "environment")
	if err != nil {
		heatAPIErr(w, err)
		return
	}
	if env == nil {
		env = map[string]any{}
	}
	userParams := normalize(orDefault(any(b.Parameters), map[string]any{})).(map[string]any)
	params, err := computeParams(t, userParams, env, false)
	if err != nil {
		heatAPIErr(w, err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lookupStack(tok.account.ProjectID, b.StackName) != nil {
		heatErr(w, 409, "StackExists", fmt.Sprintf("The Stack (%s) already exists.", b.StackName))
		return
	}
	st := s.newStack(b.StackName, tok.account.ProjectID, tok.account.UserName, nil, "", t, filesOf(b.Files), env, userParams, params)
	st.disableRollback = true
	if b.DisableRollback != nil {
		st.disableRollback = *b.DisableRollback
	}
	if b.TimeoutMins != nil {
		st.timeoutMins = int(*b.TimeoutMins)
	}
	st.tags = parseTags(b.Tags)
	s.logf("heat: stack %s (%s) CREATE with %d resources", st.name, st.id, len(st.res))
	s.startOp(st, "CREATE", func(ctx context.Context) error { return s.createAll(ctx, st) })
	w.Header().Set("Location", s.stackURL(base, st))
	writeJSON(w, http.StatusCreated, map[string]any{"stack": map[string]any{
		"id": st.id, "links": []any{map[string]any{"href": s.stackURL(base, st), "rel": "self"}}}})
}

// heatStack serves /stacks/{name}/{id}/...
func (s *Sim) heatStack(w http.ResponseWriter, r *http.Request, tok *token, base string, segs []string) {
	s.mu.Lock()
	st := s.stacks[segs[1]]
	if st == nil || st.project != tok.account.ProjectID || st.name != segs[0] {
		s.mu.Unlock()
		stackNotFound(w, segs[0]+"/"+segs[1])
		return
	}
	rest := segs[2:]
	if len(rest) == 0 {
		switch r.Method {
		case http.MethodGet:
			j := s.stackDetail(st, base)
			s.mu.Unlock()
			writeJSON(w, http.StatusOK, map[string]any{"stack": j})
		case http.MethodPut, http.MethodPatch:
			s.mu.Unlock()
			s.heatUpdateStack(w, r, st, r.Method == http.MethodPatch)
		case http.MethodDelete:
			if st.deleted {
				s.mu.Unlock()
				stackNotFound(w, segs[0])
				return
			}
			s.logf("heat: stack %s DELETE", st.name)
			s.startOp(st, "DELETE", func(ctx context.Context) error { return s.deleteAll(ctx, st) })
			s.mu.Unlock()
			w.WriteHeader(http.StatusNoContent)
		default:
			s.mu.Unlock()
			heatErr(w, 405, "HTTPMethodNotAllowed", "The method is not allowed for the requested URL.")
		}
		return
	}
	defer s.mu.Unlock()
	switch rest[0] {
	case "resources":
		s.heatResources(w, r, st, base, rest[1:])
	case "events":
		if r.Method != http.MethodGet {
			heatErr(w, 405, "HTTPMethodNotAllowed", "The method is not allowed for the requested URL.")
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"events": s.eventsJSON(st, base, "")})
	case "template":
		writeJSON(w, http.StatusOK, st.tmpl.raw)
	case "environment":
		writeJSON(w, http.StatusOK, st.env)
	case "files":
		writeJSON(w, http.StatusOK, st.files)
	case "outputs":
		outs := s.stackOutputs(st)
		if len(rest) == 1 {
			list := []any{}
			for _, o := range outs {
				list = append(list, map[string]any{"output_key": o["output_key"], "description": o["description"]})
			}
			writeJSON(w, http.StatusOK, map[string]any{"outputs": list})
			return
		}
		for _, o := range outs {
			if o["output_key"] == rest[1] {
				writeJSON(w, http.StatusOK, map[string]any{"output": o})
				return
			}
		}
		heatErr(w, 404, "NotFound", fmt.Sprintf("Specified output key %s not found.", rest[1]))
	default:
		heatErr(w, 404, "HTTPNotFound", "The resource could not be found.")
	}
}

func (s *Sim) heatUpdateStack(w http.ResponseWriter, r *http.Request, st *stack, patch bool) {
	var b createBody
	if err := readJSON(r, &b); err != nil {
		heatErr(w, 400, "HTTPBadRequest", "The request body must be a JSON object: "+err.Error())
		return
	}
	existing := patch || b.Existing
	s.mu.Lock()
	defer s.mu.Unlock()
	if st.deleted {
		stackNotFound(w, st.name)
		return
	}
	if st.busy {
		heatErr(w, 409, "ActionInProgress", fmt.Sprintf("Stack %s already has an action (%s) in progress.", st.name, st.action))
		return
	}
	var t *hotTemplate
	var err error
	switch {
	case b.Template != nil:
		if t, err = parseTemplate(b.Template); err != nil {
			heatAPIErr(w, err)
			return
		}
	case existing:
		t = st.tmpl
	default:
		heatErr(w, 400, "HTTPBadRequest", "No template specified")
		return
	}
	files := filesOf(b.Files)
	if existing {
		merged := map[string]string{}
		for k, v := range st.files {
			merged[k] = v
		}
		for k, v := range files {
			merged[k] = v
		}
		files = merged
	}
	env, err := loadDocument(b.Environment, "environment")
	if err != nil {
		heatAPIErr(w, err)
		return
	}
	if env == nil {
		env = map[string]any{}
		if existing {
			env = st.env
		}
	}
	userParams := map[string]any{}
	if existing {
		for k, v := range st.userParams {
			userParams[k] = v
		}
		for _, k := range b.ClearParameters {
			delete(userParams, k)
		}
	}
	for k, v := range normalize(orDefault(any(b.Parameters), map[string]any{})).(map[string]any) {
		userParams[k] = v
	}
	if existing {
		// Parameters the new template no longer declares are dropped.
		for k := range userParams {
			if _, ok := t.params[k]; !ok {
				if _, given := b.Parameters[k]; !given {
					delete(userParams, k)
				}
			}
		}
	}
	params, err := computeParams(t, userParams, env, false)
	if err != nil {
		heatAPIErr(w, err)
		return
	}
	st.files, st.env, st.userParams, st.params = files, env, userParams, params
	if b.TimeoutMins != nil {
		st.timeoutMins = int(*b.TimeoutMins)
	}
	if b.DisableRollback != nil {
		st.disableRollback = *b.DisableRollback
	}
	if b.Tags != nil {
		st.tags = parseTags(b.Tags)
	}
	s.logf("heat: stack %s UPDATE (%s)", st.name, map[bool]string{true: "PATCH", false: "PUT"}[patch])
	s.startOp(st, "UPDATE", func(ctx context.Context) error { return s.updateAll(ctx, st, t) })
	w.WriteHeader(http.StatusAccepted)
}

// requiredBy lists the resources of st that depend on name (s.mu held).
func requiredBy(st *stack, name string) []string {
	out := []string{}
	for _, n := range st.tmpl.resourceNames() {
		for _, d := range st.tmpl.deps(n) {
			if d == name {
				out = append(out, n)
			}
		}
	}
	return out
}

func (s *Sim) resourceJSON(r *resource, base string, detail bool) map[string]any {
	st := r.st
	su := s.stackURL(base, st)
	links := []any{
		map[string]any{"href": su + "/resources/" + url.PathEscape(r.name), "rel": "self"},
		map[string]any{"href": su, "rel": "stack"},
	}
	if r.nested != nil {
		links = append(links, map[string]any{"href": s.stackURL(base, r.nested), "rel": "nested"})
	}
	m := map[string]any{
		"resource_name": r.name, "logical_resource_id": r.name, "physical_resource_id": r.physID,
		"resource_type": r.typ, "resource_status": r.action + "_" + r.status, "resource_status_reason": r.reason,
		"creation_time": heatTime(r.created), "updated_time": heatTime(r.updated),
		"required_by": requiredBy(st, r.name), "links": links,
	}
	if st.parent != nil {
		m["parent_resource"] = st.parentRes
	}
	if detail {
		attrs := map[string]any{}
		for _, a := range attrNames(r) {
			v, _ := s.resourceAttr(r, a, nil)
			attrs[a] = v
		}
		m["attributes"] = attrs
		m["description"] = ""
		if d, ok := st.tmpl.resources[r.name]["description"].(string); ok {
			m["description"] = d
		}
	}
	return m
}

// attrNames are the attributes resource show lists.
func attrNames(r *resource) []string {
	switch r.handler.(type) {
	case serverRes:
		return []string{"name", "first_address", "networks", "addresses", "accessIPv4", "accessIPv6", "instance_name", "show"}
	case portRes:
		return []string{"name", "fixed_ips", "mac_address", "network_id", "allowed_address_pairs", "device_id", "device_owner", "status", "subnets", "show"}
	case fipRes:
		return []string{"floating_ip_address", "floating_network_id", "port_id", "fixed_ip_address", "router_id", "show"}
	case netRes, subnetRes, sgRes, serverGroupRes:
		return []string{"show"}
	case groupRes:
		return []string{"current_size", "refs", "refs_map"}
	case policyRes:
		return []string{"alarm_url", "signal_url"}
	case valueRes, randomRes:
		return []string{"value"}
	case configRes:
		return []string{"config"}
	case templateRes:
		if r.nested != nil {
			var out []string
			for n := range r.nested.tmpl.outputs {
				out = append(out, n)
			}
			sort.Strings(out)
			return append(out, "OS::stack_id")
		}
	}
	return nil
}

// collectResources lists st's resources and, depth levels down, those of
// nested stacks (s.mu held).
func (s *Sim) collectResources(st *stack, depth int, out *[]*resource) {
	for _, n := range sortedResNames(st) {
		r := st.res[n]
		*out = append(*out, r)
		if depth > 0 && r.nested != nil && !r.nested.deleted {
			s.collectResources(r.nested, depth-1, out)
		}
	}
}

func sortedResNames(st *stack) []string {
	names := make([]string, 0, len(st.res))
	for n := range st.res {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (s *Sim) findResource(st *stack, ref string) *resource {
	if r := st.res[ref]; r != nil {
		return r
	}
	for _, r := range st.res {
		if r.physID == ref && ref != "" {
			return r
		}
	}
	return nil
}

func (s *Sim) heatResources(w http.ResponseWriter, r *http.Request, st *stack, base string, rest []string) {
	if len(rest) == 0 {
		if r.Method != http.MethodGet {
			heatErr(w, 405, "HTTPMethodNotAllowed", "The method is not allowed for the requested URL.")
			return
		}
		q := r.URL.Query()
		depth := 0
		if v := q.Get("nested_depth"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				heatErr(w, 400, "HTTPBadRequest", "Only integer is acceptable by 'nested_depth'.")
				return
			}
			depth = n
		}
		var all []*resource
		if !st.deleted {
			s.collectResources(st, depth, &all)
		}
		detail := q.Get("with_detail") == "true"
		out := []any{}
		for _, res := range all {
			if v := q["type"]; len(v) > 0 && !contains(v, res.typ) {
				continue
			}
			if v := q["name"]; len(v) > 0 && !contains(v, res.name) {
				continue
			}
			if v := q["status"]; len(v) > 0 && !contains(v, res.status) && !contains(v, res.action+"_"+res.status) {
				continue
			}
			if v := q["physical_resource_id"]; len(v) > 0 && !contains(v, res.physID) {
				continue
			}
			out = append(out, s.resourceJSON(res, base, detail))
		}
		writeJSON(w, http.StatusOK, map[string]any{"resources": out})
		return
	}
	res := s.findResource(st, rest[0])
	if res == nil {
		heatErr(w, 404, "EntityNotFound", fmt.Sprintf("The Resource (%s) could not be found.", rest[0]))
		return
	}
	switch {
	case len(rest) == 1 && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, map[string]any{"resource": s.resourceJSON(res, base, true)})
	case len(rest) == 1 && r.Method == http.MethodPatch:
		var b struct {
			MarkUnhealthy *bool  `json:"mark_unhealthy"`
			Reason        string `json:"resource_status_reason"`
		}
		if err := readJSON(r, &b); err != nil || b.MarkUnhealthy == nil {
			heatErr(w, 400, "HTTPBadRequest", "mark_unhealthy is required")
			return
		}
		// Real Heat takes the lock of the stack holding the resource: a
		// (nested) stack still running an action refuses.
		if st.busy || st.status == "IN_PROGRESS" {
			heatErr(w, 409, "ActionInProgress", fmt.Sprintf("Stack %s already has an action (%s) in progress.", st.name, st.action))
			return
		}
		if res.status == "IN_PROGRESS" {
			heatErr(w, 409, "ActionInProgress", fmt.Sprintf("Cannot mark unhealthy a resource (%s) in progress.", res.name))
			return
		}
		if *b.MarkUnhealthy {
			reason := b.Reason
			if reason == "" {
				reason = "state changed by resource_mark_unhealthy request"
			}
			s.setResState(res, "CHECK", "FAILED", reason)
			s.logf("heat: %s/%s marked unhealthy", st.name, res.name)
		} else if res.action == "CHECK" && res.status == "FAILED" {
			s.setResState(res, "CHECK", "COMPLETE", orString(b.Reason, "state changed by resource_mark_unhealthy request"))
		}
		w.WriteHeader(http.StatusOK)
	case len(rest) == 2 && rest[1] == "events":
		writeJSON(w, http.StatusOK, map[string]any{"events": s.eventsJSON(st, base, res.name)})
	case len(rest) == 2 && rest[1] == "metadata":
		md, _ := st.tmpl.resources[res.name]["metadata"].(map[string]any)
		writeJSON(w, http.StatusOK, map[string]any{"metadata": orDefault(any(md), map[string]any{})})
	case len(rest) == 2 && rest[1] == "signal" && r.Method == http.MethodPost:
		if err := s.signal(st, res); err != nil {
			heatAPIErr(w, err)
			return
		}
		w.WriteHeader(http.StatusOK)
	default:
		heatErr(w, 404, "HTTPNotFound", "The resource could not be found.")
	}
}

func orString(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

func (s *Sim) eventsJSON(st *stack, base, resName string) []any {
	out := []any{}
	su := s.stackURL(base, st)
	for _, e := range st.events {
		if resName != "" && e.resName != resName {
			continue
		}
		out = append(out, map[string]any{
			"id": e.id, "event_time": heatTime(e.at), "resource_name": e.resName, "logical_resource_id": e.resName,
			"physical_resource_id": e.physID, "resource_status": e.status, "resource_status_reason": e.reason,
			"links": []any{
				map[string]any{"href": su + "/resources/" + url.PathEscape(e.resName) + "/events/" + e.id, "rel": "self"},
				map[string]any{"href": su + "/resources/" + url.PathEscape(e.resName), "rel": "resource"},
				map[string]any{"href": su, "rel": "stack"}},
		})
	}
	return out
}

// signal handles a ScalingPolicy signal: the group it names is resized at
// once (no cooldown) (s.mu held).
func (s *Sim) signal(st *stack, pol *resource) error {
	if _, ok := pol.handler.(policyRes); !ok {
		return errf(400, "ResourceActionNotSupported", "%s does not support signals", pol.typ)
	}
	groupID := toString(pol.props["auto_scaling_group_id"])
	var grp *resource
	for _, x := range st.res {
		if _, ok := x.handler.(groupRes); ok && (x.physID == groupID || x.name == groupID) {
			grp = x
		}
	}
	if grp == nil || grp.nested == nil {
		return errf(400, "ResourceFailure", "Alarm %s could not find scaling group named \"%s\"", pol.name, groupID)
	}
	if grp.status == "IN_PROGRESS" || st.busy {
		return errf(409, "ActionInProgress", "Stack %s already has an action (%s) in progress.", st.name, st.action)
	}
	cur := len(grp.nested.res)
	adj, _ := toNumber(pol.props["scaling_adjustment"])
	target := cur
	switch str(pol.props, "adjustment_type") {
	case "change_in_capacity":
		target = cur + int(adj)
	case "exact_capacity":
		target = int(adj)
	case "percent_change_in_capacity":
		d := int(float64(cur) * adj / 100)
		if d == 0 && adj != 0 {
			d = int(adj / absf(adj))
		}
		target = cur + d
	}
	min, max := num(grp.props, "min_size", 0), num(grp.props, "max_size", 0)
	if target < min {
		target = min
	}
	if target > max {
		target = max
	}
	s.setResState(grp, "UPDATE", "IN_PROGRESS", "state changed")
	s.goAsync(func(ctx context.Context) {
		err := groupRes{asg: true}.resize(ctx, s, grp, target)
		s.mu.Lock()
		defer s.mu.Unlock()
		if err != nil {
			f := wrapFailure(grp.name, err)
			s.setResState(grp, "UPDATE", "FAILED", innerReason(f))
			return
		}
		s.setResState(grp, "UPDATE", "COMPLETE", "state changed")
	})
	return nil
}

func absf(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}
