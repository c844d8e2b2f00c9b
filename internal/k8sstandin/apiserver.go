package k8sstandin

import (
	"context"
	"crypto"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Annotations the stand-in understands on Pods (test knobs).
const (
	// AnnotationEvictionBlocked on a Pod set to "true" makes every eviction
	// of it fail with 429, as if a PodDisruptionBudget forbade it.
	AnnotationEvictionBlocked = "k8s-standin.mini-vnfm.io/eviction-blocked"
	// AnnotationTerminationSeconds on a Pod delays its disappearance after an
	// eviction or delete by that many seconds (it shows as Terminating).
	AnnotationTerminationSeconds = "k8s-standin.mini-vnfm.io/termination-seconds"
	// annotationExpires marks objects that vanish at that time (the
	// kubeadm-certs Secret, whose real owner is a 2 h bootstrap token).
	annotationExpires = "k8s-standin.mini-vnfm.io/expires"
)

var (
	resNodes               = resourceFor("", "v1", "nodes")
	resNamespaces          = resourceFor("", "v1", "namespaces")
	resPods                = resourceFor("", "v1", "pods")
	resSecrets             = resourceFor("", "v1", "secrets")
	resServiceAccounts     = resourceFor("", "v1", "serviceaccounts")
	resConfigMaps          = resourceFor("", "v1", "configmaps")
	resClusterRoleBindings = resourceFor("rbac.authorization.k8s.io", "v1", "clusterrolebindings")
	resClusterRoles        = resourceFor("rbac.authorization.k8s.io", "v1", "clusterroles")
	resRoleBindings        = resourceFor("rbac.authorization.k8s.io", "v1", "rolebindings")
	resRoles               = resourceFor("rbac.authorization.k8s.io", "v1", "roles")
	resCSRs                = resourceFor("certificates.k8s.io", "v1", "certificatesigningrequests")
)

// APIServer is the fake kube-apiserver: an http.Handler serving the subset of
// the Kubernetes API the drivers use, on top of a Store.
type APIServer struct {
	Store Store
	// ClientCA verifies client certificates (set it as the TLS server's
	// ClientCAs too); its PEM is put into service account token Secrets.
	ClientCA *x509.Certificate
	// Signer, when set, signs kubelet client CSRs (kube-controller-manager's
	// job in a real cluster).
	Signer *CA
	// SAKey signs service account tokens; SAPub verifies them.
	SAKey crypto.Signer
	SAPub crypto.PublicKey
	// AdvertiseAddress is "ip:port", reported by /api.
	AdvertiseAddress string
	// NodeMonitorGracePeriod: a Node whose kubelet has not posted status for
	// this long reads as Ready=Unknown (default 40s, like Kubernetes).
	NodeMonitorGracePeriod time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Logf, when set, gets a line per request.
	Logf func(format string, args ...any)

	bootstrapped atomic.Bool // EnsureDefaults done: /healthz reports ok
}

func (s *APIServer) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *APIServer) grace() time.Duration {
	if s.NodeMonitorGracePeriod > 0 {
		return s.NodeMonitorGracePeriod
	}
	return 40 * time.Second
}

// apiError is a Kubernetes Status failure.
type apiError struct {
	Code    int
	Reason  string
	Message string
	Details Obj
}

func (e *apiError) Error() string { return e.Message }

func statusObj(code int, reason, msg string, details Obj) Obj {
	st := Obj{"kind": "Status", "apiVersion": "v1", "metadata": Obj{}, "status": "Failure", "message": msg, "reason": reason, "code": code}
	if details != nil {
		st["details"] = details
	}
	return st
}

func errNotFound(r *resource, name string) *apiError {
	return &apiError{404, "NotFound", fmt.Sprintf("%s %q not found", r.qualifiedPlural(), name), Obj{"name": name, "group": r.Group, "kind": r.Name}}
}

func (r *resource) qualifiedPlural() string {
	if r.Group == "" {
		return r.Name
	}
	return r.Name + "." + r.Group
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func writeErr(w http.ResponseWriter, err error) {
	var ae *apiError
	if !errors.As(err, &ae) {
		ae = &apiError{500, "InternalError", "Internal error occurred: " + err.Error(), nil}
	}
	writeJSON(w, ae.Code, statusObj(ae.Code, ae.Reason, ae.Message, ae.Details))
}

// reqInfo is a parsed resource request path.
type reqInfo struct {
	res  *resource
	ns   string
	name string
	sub  string
}

// parsePath splits /api/v1/... and /apis/<group>/<version>/... into a
// resource request; ok is false for anything else.
func parsePath(p string) (reqInfo, bool, error) {
	segs := strings.Split(strings.Trim(p, "/"), "/")
	var group, version string
	switch {
	case len(segs) >= 3 && segs[0] == "api":
		group, version, segs = "", segs[1], segs[2:]
	case len(segs) >= 4 && segs[0] == "apis":
		group, version, segs = segs[1], segs[2], segs[3:]
	default:
		return reqInfo{}, false, nil
	}
	var ri reqInfo
	if len(segs) >= 3 && segs[0] == "namespaces" {
		if r := resourceFor(group, version, segs[2]); r != nil && r.Namespaced {
			ri.ns = segs[1]
			segs = segs[2:]
		}
	}
	ri.res = resourceFor(group, version, segs[0])
	if ri.res == nil {
		return ri, true, &apiError{404, "NotFound", "the server could not find the requested resource", Obj{}}
	}
	if len(segs) > 1 {
		ri.name = segs[1]
	}
	if len(segs) > 2 {
		ri.sub = segs[2]
	}
	if len(segs) > 3 {
		return ri, true, &apiError{404, "NotFound", "the server could not find the requested resource", Obj{}}
	}
	return ri, true, nil
}

// ServeHTTP implements http.Handler.
func (s *APIServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.Logf != nil {
		s.Logf("%s %s %s", r.RemoteAddr, r.Method, r.URL.RequestURI())
	}
	u, err := s.authenticate(r)
	if err != nil {
		writeJSON(w, http.StatusUnauthorized, statusObj(401, "Unauthorized", "Unauthorized", nil))
		return
	}
	ctx := r.Context()
	ri, isRes, perr := parsePath(r.URL.Path)
	if !isRes {
		s.serveNonResource(w, r, u)
		return
	}
	if perr != nil {
		writeErr(w, perr)
		return
	}
	a := attrs{group: ri.res.Group, resource: ri.res.Name, ns: ri.ns, name: ri.name}
	if ri.sub != "" {
		a.resource += "/" + ri.sub
	}
	switch r.Method {
	case http.MethodGet:
		a.verb = "get"
		if ri.name == "" {
			a.verb = "list"
			if r.URL.Query().Get("watch") == "true" || r.URL.Query().Get("watch") == "1" {
				a.verb = "watch"
			}
		}
	case http.MethodPost:
		a.verb = "create"
	case http.MethodPut:
		a.verb = "update"
	case http.MethodPatch:
		a.verb = "patch"
	case http.MethodDelete:
		a.verb = "delete"
	default:
		writeErr(w, &apiError{405, "MethodNotAllowed", "the server does not allow this method on the requested resource", nil})
		return
	}
	if !s.authorize(ctx, u, a) {
		scope := "at the cluster scope"
		if ri.ns != "" {
			scope = fmt.Sprintf("in the namespace %q", ri.ns)
		}
		what := ri.res.qualifiedPlural()
		if ri.name != "" {
			what += fmt.Sprintf(" %q", ri.name)
		}
		writeErr(w, &apiError{403, "Forbidden", fmt.Sprintf("%s is forbidden: User %q cannot %s resource %q in API group %q %s",
			what, u.Name, a.verb, a.resource, ri.res.Group, scope), Obj{"name": ri.name, "group": ri.res.Group, "kind": ri.res.Name}})
		return
	}
	var body []byte
	if r.Body != nil {
		body, _ = io.ReadAll(io.LimitReader(r.Body, 8<<20))
	}
	var out any
	code := http.StatusOK
	switch {
	case a.verb == "watch":
		err = &apiError{405, "MethodNotAllowed", "watch is not supported by the k8s stand-in", nil}
	case a.verb == "list":
		out, err = s.list(ctx, ri, r)
	case a.verb == "get" && (ri.sub == "" || ri.sub == "status"):
		out, err = s.getObj(ctx, ri.res, ri.ns, ri.name)
	case a.verb == "create" && ri.res == resPods && ri.sub == "eviction":
		out, err = s.evict(ctx, ri, body)
		code = http.StatusCreated
	case a.verb == "create" && ri.res == resServiceAccounts && ri.sub == "token":
		out, err = s.tokenRequest(ctx, ri, body)
		code = http.StatusCreated
	case a.verb == "create" && ri.name == "":
		out, err = s.create(ctx, ri, body, u)
		code = http.StatusCreated
	case a.verb == "update" && (ri.sub == "" || ri.sub == "status"):
		out, err = s.update(ctx, ri, body)
	case a.verb == "patch" && (ri.sub == "" || ri.sub == "status"):
		ct := r.Header.Get("Content-Type")
		if strings.HasPrefix(ct, "application/json-patch+json") {
			err = &apiError{415, "UnsupportedMediaType", "the k8s stand-in accepts only merge and strategic merge patches", nil}
			break
		}
		out, err = s.patch(ctx, ri, body)
	case a.verb == "delete" && ri.sub == "":
		out, err = s.deleteObj(ctx, ri, body)
	default:
		err = &apiError{405, "MethodNotAllowed", "the server does not allow this method on the requested resource", nil}
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, code, out)
}

func (s *APIServer) serveNonResource(w http.ResponseWriter, r *http.Request, u *userInfo) {
	p := r.URL.Path
	if p != "/" {
		p = strings.TrimRight(p, "/")
	}
	if !s.authorize(r.Context(), u, attrs{verb: strings.ToLower(r.Method), path: p}) {
		writeErr(w, &apiError{403, "Forbidden", fmt.Sprintf("forbidden: User %q cannot %s path %q", u.Name, strings.ToLower(r.Method), p), Obj{}})
		return
	}
	switch p {
	case "/healthz", "/livez", "/readyz":
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		defer cancel()
		if !s.bootstrapped.Load() {
			http.Error(w, "[-]poststarthook/bootstrap-controller failed: not finished\nhealthz check failed", http.StatusInternalServerError)
			return
		}
		if _, err := s.Store.Get(ctx, "/registry/health"); err != nil && !errors.Is(err, ErrNotFound) {
			http.Error(w, "[-]etcd failed: "+err.Error()+"\nhealthz check failed", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok")
	case "/version":
		major, minor := "1", "31"
		if parts := strings.Split(strings.TrimPrefix(KubernetesVersion, "v"), "."); len(parts) >= 2 {
			major, minor = parts[0], parts[1]
		}
		writeJSON(w, 200, Obj{"major": major, "minor": minor, "gitVersion": KubernetesVersion, "gitCommit": "k8s-standin-" + Version,
			"gitTreeState": "clean", "buildDate": "2025-01-01T00:00:00Z", "goVersion": "go", "compiler": "gc", "platform": "linux/amd64"})
	case "/api":
		writeJSON(w, 200, Obj{"kind": "APIVersions", "versions": []string{"v1"},
			"serverAddressByClientCIDRs": []Obj{{"clientCIDR": "0.0.0.0/0", "serverAddress": s.AdvertiseAddress}}})
	case "/apis":
		var groups []Obj
		seen := map[string]bool{}
		for _, res := range resources {
			if res.Group == "" || seen[res.Group] {
				continue
			}
			seen[res.Group] = true
			gv := Obj{"groupVersion": res.APIVersion(), "version": res.Version}
			groups = append(groups, Obj{"name": res.Group, "versions": []Obj{gv}, "preferredVersion": gv})
		}
		writeJSON(w, 200, Obj{"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
	default:
		gv := strings.TrimPrefix(strings.TrimPrefix(p, "/apis/"), "/api/")
		var list []Obj
		for _, res := range resources {
			if res.APIVersion() == gv {
				verbs := []string{"create", "delete", "get", "list", "patch", "update"}
				list = append(list, Obj{"name": res.Name, "singularName": res.Singular, "namespaced": res.Namespaced,
					"kind": res.Kind, "verbs": verbs, "shortNames": res.Short})
			}
		}
		if list == nil {
			writeErr(w, &apiError{404, "NotFound", "the server could not find the requested resource", Obj{}})
			return
		}
		writeJSON(w, 200, Obj{"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": list})
	}
}

// reading, with the controllers' effects applied lazily

// live applies time-based effects to a stored object: expired bootstrap
// tokens and kubeadm-certs vanish, Terminating pods past their grace period
// vanish, nodes without heartbeat read as NotReady. ok=false means gone.
func (s *APIServer) live(ctx context.Context, res *resource, kv KV, o Obj) (Obj, bool) {
	now := s.now()
	expired := func(ts string) bool {
		t, ok := parseTime(ts)
		return ok && !now.Before(t)
	}
	gone := false
	switch res {
	case resSecrets:
		if getStr(o, "type") == "bootstrap.kubernetes.io/token" && expired(secretData(o, "expiration")) {
			gone = true
		}
		if expired(annotation(o, annotationExpires)) {
			gone = true
		}
	case resPods:
		if ts := getStr(o, "metadata", "deletionTimestamp"); ts != "" && expired(ts) {
			gone = true
		}
	case resNodes:
		for _, c := range getSlice(o, "status", "conditions") {
			cm, _ := c.(map[string]any)
			if cm == nil || cm["type"] != "Ready" {
				continue
			}
			hb, ok := parseTime(getStr(cm, "lastHeartbeatTime"))
			if ok && now.Sub(hb) > s.grace() && cm["status"] == "True" {
				cm["status"] = "Unknown"
				cm["reason"] = "NodeStatusUnknown"
				cm["message"] = "Kubelet stopped posting node status."
			}
		}
	}
	if gone {
		_ = s.Store.Delete(ctx, kv.Key, kv.Rev)
		return nil, false
	}
	setRV(o, kv.Rev)
	return o, true
}

func setRV(o Obj, rev int64) {
	ensureMap(o, "metadata")["resourceVersion"] = strconv.FormatInt(rev, 10)
}

func withKind(res *resource, o Obj) Obj {
	o["kind"] = res.Kind
	o["apiVersion"] = res.APIVersion()
	return o
}

// getLive returns an object or ErrNotFound-like apiError.
func (s *APIServer) getLive(ctx context.Context, res *resource, ns, name string) (Obj, error) {
	o, _, err := s.getKV(ctx, res, ns, name)
	return o, err
}

func (s *APIServer) getKV(ctx context.Context, res *resource, ns, name string) (Obj, KV, error) {
	kv, err := s.Store.Get(ctx, storeKey(res, ns, name))
	if errors.Is(err, ErrNotFound) {
		return nil, kv, errNotFound(res, name)
	}
	if err != nil {
		return nil, kv, err
	}
	o, err := decodeObj(kv.Value)
	if err != nil {
		return nil, kv, err
	}
	o, ok := s.live(ctx, res, kv, o)
	if !ok {
		return nil, kv, errNotFound(res, name)
	}
	return withKind(res, o), kv, nil
}

func (s *APIServer) getObj(ctx context.Context, res *resource, ns, name string) (Obj, error) {
	o, kv, err := s.getKV(ctx, res, ns, name)
	if err != nil {
		return nil, err
	}
	if res == resConfigMaps && ns == "kube-public" && name == "cluster-info" {
		return s.signClusterInfo(ctx, o), nil
	}
	if res == resSecrets && getStr(o, "type") == "kubernetes.io/service-account-token" && getStr(o, "data", "token") == "" {
		if filled, err := s.fillToken(ctx, o, kv.Rev); err == nil && filled != nil {
			return filled, nil
		}
	}
	return o, nil
}

func (s *APIServer) listLive(ctx context.Context, res *resource, ns string) ([]Obj, error) {
	kvs, err := s.Store.List(ctx, storePrefix(res, ns))
	if err != nil {
		return nil, err
	}
	var out []Obj
	for _, kv := range kvs {
		o, err := decodeObj(kv.Value)
		if err != nil {
			continue
		}
		if o, ok := s.live(ctx, res, kv, o); ok {
			out = append(out, o)
		}
	}
	return out, nil
}

func (s *APIServer) list(ctx context.Context, ri reqInfo, r *http.Request) (Obj, error) {
	q := r.URL.Query()
	fsel, err := parseFieldSelector(q.Get("fieldSelector"))
	if err != nil {
		return nil, &apiError{400, "BadRequest", err.Error(), nil}
	}
	lsel, err := parseLabelSelector(q.Get("labelSelector"))
	if err != nil {
		return nil, &apiError{400, "BadRequest", err.Error(), nil}
	}
	objs, err := s.listLive(ctx, ri.res, ri.ns)
	if err != nil {
		return nil, err
	}
	items := []Obj{}
	var maxRV int64
	for _, o := range objs {
		if !fsel(o) || !lsel(labelsOf(o)) {
			continue
		}
		if rv, _ := strconv.ParseInt(getStr(o, "metadata", "resourceVersion"), 10, 64); rv > maxRV {
			maxRV = rv
		}
		items = append(items, o)
	}
	sort.SliceStable(items, func(i, j int) bool {
		if a, b := metaNamespace(items[i]), metaNamespace(items[j]); a != b {
			return a < b
		}
		return metaName(items[i]) < metaName(items[j])
	})
	return Obj{"kind": ri.res.Kind + "List", "apiVersion": ri.res.APIVersion(),
		"metadata": Obj{"resourceVersion": strconv.FormatInt(maxRV, 10)}, "items": items}, nil
}

// selectors

func parseFieldSelector(sel string) (func(Obj) bool, error) {
	type term struct {
		path []string
		val  string
		neg  bool
	}
	var terms []term
	for _, part := range splitSelector(sel) {
		var t term
		var k string
		switch {
		case strings.Contains(part, "!="):
			k, t.val, _ = strings.Cut(part, "!=")
			t.neg = true
		case strings.Contains(part, "=="):
			k, t.val, _ = strings.Cut(part, "==")
		case strings.Contains(part, "="):
			k, t.val, _ = strings.Cut(part, "=")
		default:
			return nil, fmt.Errorf("invalid selector: %q; can't understand %q", sel, part)
		}
		t.path = strings.Split(strings.TrimSpace(k), ".")
		t.val = strings.TrimSpace(t.val)
		terms = append(terms, t)
	}
	return func(o Obj) bool {
		for _, t := range terms {
			m := getMap(o, t.path[:len(t.path)-1]...)
			v := ""
			if m != nil {
				switch x := m[t.path[len(t.path)-1]].(type) {
				case string:
					v = x
				case bool:
					v = strconv.FormatBool(x)
				case float64:
					v = strconv.FormatFloat(x, 'f', -1, 64)
				}
			}
			if (v == t.val) == t.neg {
				return false
			}
		}
		return true
	}, nil
}

func splitSelector(sel string) []string {
	var parts []string
	depth, start := 0, 0
	for i, c := range sel {
		switch c {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, sel[start:i])
				start = i + 1
			}
		}
	}
	parts = append(parts, sel[start:])
	var out []string
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

var setTermRE = regexp.MustCompile(`^([A-Za-z0-9./_-]+)\s+(in|notin)\s+\(([^)]*)\)$`)

func parseLabelSelector(sel string) (func(map[string]string) bool, error) {
	var preds []func(map[string]string) bool
	for _, part := range splitSelector(sel) {
		if m := setTermRE.FindStringSubmatch(part); m != nil {
			key, op := m[1], m[2]
			vals := map[string]bool{}
			for _, v := range strings.Split(m[3], ",") {
				vals[strings.TrimSpace(v)] = true
			}
			preds = append(preds, func(l map[string]string) bool {
				v, ok := l[key]
				if op == "in" {
					return ok && vals[v]
				}
				return !ok || !vals[v]
			})
			continue
		}
		switch {
		case strings.Contains(part, "!="):
			k, v, _ := strings.Cut(part, "!=")
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			preds = append(preds, func(l map[string]string) bool { return l[k] != v })
		case strings.Contains(part, "="):
			k, v, _ := strings.Cut(strings.Replace(part, "==", "=", 1), "=")
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			preds = append(preds, func(l map[string]string) bool { x, ok := l[k]; return ok && x == v })
		case strings.HasPrefix(part, "!"):
			k := strings.TrimSpace(part[1:])
			preds = append(preds, func(l map[string]string) bool { _, ok := l[k]; return !ok })
		default:
			k := part
			preds = append(preds, func(l map[string]string) bool { _, ok := l[k]; return ok })
		}
	}
	return func(l map[string]string) bool {
		for _, p := range preds {
			if !p(l) {
				return false
			}
		}
		return true
	}, nil
}

// writing

var nameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)

func (s *APIServer) decodeBody(ri reqInfo, body []byte) (Obj, error) {
	o, err := decodeObj(body)
	if err != nil {
		return nil, &apiError{400, "BadRequest", "the body of the request was in an unknown format: " + err.Error(), nil}
	}
	if k, _ := o["kind"].(string); k != "" && k != ri.res.Kind {
		return nil, &apiError{400, "BadRequest", fmt.Sprintf("the kind %q does not match %q", k, ri.res.Kind), nil}
	}
	return o, nil
}

func (s *APIServer) create(ctx context.Context, ri reqInfo, body []byte, u *userInfo) (Obj, error) {
	o, err := s.decodeBody(ri, body)
	if err != nil {
		return nil, err
	}
	return s.createObj(ctx, ri.res, ri.ns, o, u)
}

// createObj stores a new object with server-set metadata and the
// controllers' side effects.
func (s *APIServer) createObj(ctx context.Context, res *resource, ns string, o Obj, u *userInfo) (Obj, error) {
	md := ensureMap(o, "metadata")
	if res.Namespaced {
		if ons, _ := md["namespace"].(string); ons != "" && ns != "" && ons != ns {
			return nil, &apiError{400, "BadRequest", "the namespace of the provided object does not match the namespace sent on the request", nil}
		}
		if ns == "" {
			ns, _ = md["namespace"].(string)
		}
		if ns == "" {
			ns = "default"
		}
		md["namespace"] = ns
		if _, err := s.getLive(ctx, resNamespaces, "", ns); err != nil {
			return nil, errNotFound(resNamespaces, ns)
		}
	} else {
		delete(md, "namespace")
	}
	name, _ := md["name"].(string)
	if name == "" {
		if gn, _ := md["generateName"].(string); gn != "" {
			name = gn + randSuffix()
			md["name"] = name
		}
	}
	if name == "" {
		return nil, &apiError{422, "Invalid", fmt.Sprintf("%s \"\" is invalid: metadata.name: Required value: name or generateName is required", res.Kind), nil}
	}
	if !nameRE.MatchString(name) && !(res.Group == "rbac.authorization.k8s.io" || res == resCSRs) {
		return nil, &apiError{422, "Invalid", fmt.Sprintf("%s %q is invalid: metadata.name: Invalid value: %q: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.'", res.Kind, name, name), nil}
	}
	now := s.now()
	md["uid"] = newUID()
	md["creationTimestamp"] = rfc3339(now)
	delete(md, "resourceVersion")
	delete(md, "deletionTimestamp")
	o["kind"], o["apiVersion"] = res.Kind, res.APIVersion()
	if err := s.defaults(ctx, res, o, u); err != nil {
		return nil, err
	}
	b, _ := json.Marshal(o)
	rev, err := s.Store.Create(ctx, storeKey(res, ns, name), b)
	if errors.Is(err, ErrExists) {
		return nil, &apiError{409, "AlreadyExists", fmt.Sprintf("%s %q already exists", res.qualifiedPlural(), name), Obj{"name": name, "group": res.Group, "kind": res.Name}}
	}
	if err != nil {
		return nil, err
	}
	setRV(o, rev)
	s.afterCreate(ctx, res, o, rev)
	if res == resSecrets {
		if filled, err := s.getObj(ctx, res, ns, name); err == nil {
			return filled, nil
		}
	}
	return o, nil
}

// defaults fills in what the API server and controllers would.
func (s *APIServer) defaults(_ context.Context, res *resource, o Obj, u *userInfo) error {
	now := rfc3339(s.now())
	switch res {
	case resNamespaces:
		ensureMap(o, "status")["phase"] = "Active"
	case resSecrets:
		if sd := getMap(o, "stringData"); sd != nil {
			data := ensureMap(o, "data")
			for k, v := range sd {
				if str, ok := v.(string); ok {
					data[k] = base64.StdEncoding.EncodeToString([]byte(str))
				}
			}
			delete(o, "stringData")
		}
		if getStr(o, "type") == "" {
			o["type"] = "Opaque"
		}
	case resPods:
		st := ensureMap(o, "status")
		if getStr(o, "spec", "nodeName") != "" {
			if st["phase"] == nil {
				st["phase"] = "Running"
			}
			st["conditions"] = []any{Obj{"type": "Ready", "status": "True", "lastTransitionTime": now}}
			st["startTime"] = now
		} else if st["phase"] == nil {
			st["phase"] = "Pending"
		}
	case resNodes:
		st := ensureMap(o, "status")
		if st["conditions"] == nil {
			st["conditions"] = []any{Obj{"type": "Ready", "status": "True", "reason": "KubeletReady",
				"message": "kubelet is posting ready status", "lastHeartbeatTime": now, "lastTransitionTime": now}}
		}
	case resCSRs:
		spec := ensureMap(o, "spec")
		spec["username"] = u.Name
		spec["groups"] = u.Groups
		if err := s.signCSR(o, u); err != nil {
			return &apiError{422, "Invalid", err.Error(), nil}
		}
	}
	return nil
}

// afterCreate runs the controllers reacting to a new object.
func (s *APIServer) afterCreate(ctx context.Context, res *resource, o Obj, _ int64) {
	switch res {
	case resNodes:
		// DaemonSet controller: a kube-proxy pod on every node.
		if _, err := s.getLive(ctx, resNamespaces, "", "kube-system"); err == nil {
			pod := Obj{"metadata": Obj{"generateName": "kube-proxy-", "namespace": "kube-system",
				"labels":          Obj{"k8s-app": "kube-proxy"},
				"ownerReferences": []any{Obj{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "kube-proxy", "uid": "00000000-0000-4000-8000-00000000d5e7", "controller": true}}},
				"spec": Obj{"nodeName": metaName(o), "containers": []any{Obj{"name": "kube-proxy", "image": "registry.k8s.io/kube-proxy:" + KubernetesVersion}}}}
			_, _ = s.createObj(ctx, resPods, "kube-system", pod, &userInfo{Name: "system:serviceaccount:kube-system:daemon-set-controller"})
		}
	case resServiceAccounts:
		secs, _ := s.listLive(ctx, resSecrets, metaNamespace(o))
		for _, sec := range secs {
			if getStr(sec, "type") == "kubernetes.io/service-account-token" && getStr(sec, "data", "token") == "" &&
				annotation(sec, "kubernetes.io/service-account.name") == metaName(o) {
				rv, _ := strconv.ParseInt(getStr(sec, "metadata", "resourceVersion"), 10, 64)
				_, _ = s.fillToken(ctx, sec, rv)
			}
		}
	}
}

// fillToken is the token controller: it puts a token for the Secret's
// service account into data.token (plus ca.crt and namespace). It returns nil
// when the service account does not exist (yet).
func (s *APIServer) fillToken(ctx context.Context, sec Obj, rev int64) (Obj, error) {
	ns, saName := metaNamespace(sec), annotation(sec, "kubernetes.io/service-account.name")
	if saName == "" || s.SAKey == nil {
		return nil, nil
	}
	sa, err := s.getLive(ctx, resServiceAccounts, ns, saName)
	if err != nil {
		return nil, nil
	}
	saUID := getStr(sa, "metadata", "uid")
	if want := annotation(sec, "kubernetes.io/service-account.uid"); want != "" && want != saUID {
		return nil, nil
	}
	tok, _, err := s.serviceAccountToken(ns, saName, saUID, metaName(sec), 0)
	if err != nil {
		return nil, err
	}
	sec = deepCopy(sec)
	ensureMap(sec, "metadata", "annotations")["kubernetes.io/service-account.uid"] = saUID
	data := ensureMap(sec, "data")
	data["token"] = base64.StdEncoding.EncodeToString([]byte(tok))
	data["namespace"] = base64.StdEncoding.EncodeToString([]byte(ns))
	if s.ClientCA != nil {
		data["ca.crt"] = base64.StdEncoding.EncodeToString(CertPEM(s.ClientCA))
	}
	delete(getMap(sec, "metadata"), "resourceVersion")
	b, _ := json.Marshal(sec)
	nrev, err := s.Store.Update(ctx, storeKey(resSecrets, ns, metaName(sec)), b, rev)
	if err != nil {
		return nil, err
	}
	setRV(sec, nrev)
	return sec, nil
}

// ReconcileTokens fills every service account token Secret still missing its
// token (the token controller's periodic resync).
func (s *APIServer) ReconcileTokens(ctx context.Context) {
	secs, err := s.listLive(ctx, resSecrets, "")
	if err != nil {
		return
	}
	for _, sec := range secs {
		if getStr(sec, "type") == "kubernetes.io/service-account-token" && getStr(sec, "data", "token") == "" {
			rv, _ := strconv.ParseInt(getStr(sec, "metadata", "resourceVersion"), 10, 64)
			_, _ = s.fillToken(ctx, sec, rv)
		}
	}
}

func (s *APIServer) signCSR(o Obj, u *userInfo) error {
	req := getStr(o, "spec", "request")
	pemBytes, err := base64.StdEncoding.DecodeString(req)
	if err != nil {
		return fmt.Errorf("spec.request: %v", err)
	}
	blk, _ := pem.Decode(pemBytes)
	if blk == nil || blk.Type != "CERTIFICATE REQUEST" {
		return errors.New("spec.request: no CERTIFICATE REQUEST PEM block")
	}
	csr, err := x509.ParseCertificateRequest(blk.Bytes)
	if err != nil {
		return fmt.Errorf("spec.request: %v", err)
	}
	if err := csr.CheckSignature(); err != nil {
		return fmt.Errorf("spec.request: %v", err)
	}
	if s.Signer == nil {
		return nil // stays pending
	}
	cn := csr.Subject.CommonName
	nodeClient := strings.HasPrefix(cn, "system:node:") && len(csr.Subject.Organization) == 1 && csr.Subject.Organization[0] == "system:nodes"
	// csrapproving: bootstrappers may get a client cert for a node; a node
	// may renew its own.
	if !nodeClient || !(u.in("system:bootstrappers") || u.Name == cn || u.in("system:masters")) {
		return nil
	}
	cert, _, err := s.Signer.Issue(CertSpec{CN: cn, Orgs: csr.Subject.Organization, Client: true, PublicKey: csr.PublicKey})
	if err != nil {
		return err
	}
	now := rfc3339(s.now())
	st := ensureMap(o, "status")
	st["conditions"] = []any{Obj{"type": "Approved", "status": "True", "reason": "AutoApproved",
		"message": "Auto approving kubelet client certificate after SubjectAccessReview.", "lastUpdateTime": now, "lastTransitionTime": now}}
	st["certificate"] = base64.StdEncoding.EncodeToString(CertPEM(cert))
	return nil
}

func (s *APIServer) update(ctx context.Context, ri reqInfo, body []byte) (Obj, error) {
	o, err := s.decodeBody(ri, body)
	if err != nil {
		return nil, err
	}
	cur, kv, err := s.getKV(ctx, ri.res, ri.ns, ri.name)
	if err != nil {
		return nil, err
	}
	if n := metaName(o); n != "" && n != ri.name {
		return nil, &apiError{400, "BadRequest", "the name of the object does not match the name on the URL", nil}
	}
	rev := kv.Rev
	if rv := getStr(o, "metadata", "resourceVersion"); rv != "" {
		rev, _ = strconv.ParseInt(rv, 10, 64)
	}
	md := ensureMap(o, "metadata")
	for _, k := range []string{"uid", "creationTimestamp", "namespace", "name", "deletionTimestamp"} {
		if v, ok := getMap(cur, "metadata")[k]; ok {
			md[k] = v
		}
	}
	return s.store(ctx, ri, o, rev)
}

func (s *APIServer) store(ctx context.Context, ri reqInfo, o Obj, rev int64) (Obj, error) {
	o["kind"], o["apiVersion"] = ri.res.Kind, ri.res.APIVersion()
	delete(getMap(o, "metadata"), "resourceVersion")
	b, _ := json.Marshal(o)
	nrev, err := s.Store.Update(ctx, storeKey(ri.res, ri.ns, ri.name), b, rev)
	switch {
	case errors.Is(err, ErrNotFound):
		return nil, errNotFound(ri.res, ri.name)
	case errors.Is(err, ErrConflict):
		return nil, &apiError{409, "Conflict", fmt.Sprintf("Operation cannot be fulfilled on %s %q: the object has been modified; please apply your changes to the latest version and try again", ri.res.qualifiedPlural(), ri.name), Obj{"name": ri.name, "group": ri.res.Group, "kind": ri.res.Name}}
	case err != nil:
		return nil, err
	}
	setRV(o, nrev)
	return o, nil
}

func (s *APIServer) patch(ctx context.Context, ri reqInfo, body []byte) (Obj, error) {
	p, err := decodeObj(body)
	if err != nil {
		return nil, &apiError{400, "BadRequest", "invalid patch: " + err.Error(), nil}
	}
	for attempt := 0; ; attempt++ {
		cur, kv, err := s.getKV(ctx, ri.res, ri.ns, ri.name)
		if err != nil {
			return nil, err
		}
		// Identity fields can't be patched.
		pm := deepCopy(p)
		if md := getMap(pm, "metadata"); md != nil {
			for _, k := range []string{"name", "namespace", "uid", "creationTimestamp", "resourceVersion"} {
				delete(md, k)
			}
		}
		out, err := s.store(ctx, ri, mergePatch(cur, pm), kv.Rev)
		var ae *apiError
		if errors.As(err, &ae) && ae.Reason == "Conflict" && attempt < 5 {
			continue
		}
		return out, err
	}
}

func (s *APIServer) deleteObj(ctx context.Context, ri reqInfo, body []byte) (Obj, error) {
	cur, kv, err := s.getKV(ctx, ri.res, ri.ns, ri.name)
	if err != nil {
		return nil, err
	}
	grace := -1
	if len(body) > 0 {
		var opts struct {
			GracePeriodSeconds *int `json:"gracePeriodSeconds"`
		}
		if json.Unmarshal(body, &opts) == nil && opts.GracePeriodSeconds != nil {
			grace = *opts.GracePeriodSeconds
		}
	}
	if ri.res == resPods {
		return s.deletePod(ctx, cur, kv, grace)
	}
	if err := s.Store.Delete(ctx, kv.Key, 0); err != nil && !errors.Is(err, ErrNotFound) {
		return nil, err
	}
	switch ri.res {
	case resNodes:
		// Pod garbage collection for the vanished node.
		pods, _ := s.listLive(ctx, resPods, "")
		for _, p := range pods {
			if getStr(p, "spec", "nodeName") == ri.name {
				_ = s.Store.Delete(ctx, storeKey(resPods, metaNamespace(p), metaName(p)), 0)
			}
		}
	case resNamespaces:
		for _, r := range resources {
			if !r.Namespaced {
				continue
			}
			kvs, _ := s.Store.List(ctx, storePrefix(r, ri.name))
			for _, x := range kvs {
				_ = s.Store.Delete(ctx, x.Key, 0)
			}
		}
	}
	if ri.res == resPods || ri.res == resNodes || ri.res == resNamespaces {
		return cur, nil
	}
	return Obj{"kind": "Status", "apiVersion": "v1", "metadata": Obj{}, "status": "Success",
		"details": Obj{"name": ri.name, "group": ri.res.Group, "kind": ri.res.Name, "uid": getStr(cur, "metadata", "uid")}}, nil
}

// deletePod deletes a pod at once, or marks it Terminating when it has a
// termination delay (annotation) and the caller did not ask for grace 0.
func (s *APIServer) deletePod(ctx context.Context, pod Obj, kv KV, grace int) (Obj, error) {
	delay, _ := strconv.Atoi(annotation(pod, AnnotationTerminationSeconds))
	if grace >= 0 && grace < delay {
		delay = grace
	}
	if delay <= 0 {
		if err := s.Store.Delete(ctx, kv.Key, 0); err != nil && !errors.Is(err, ErrNotFound) {
			return nil, err
		}
		return pod, nil
	}
	if getStr(pod, "metadata", "deletionTimestamp") != "" {
		return pod, nil
	}
	md := ensureMap(pod, "metadata")
	md["deletionTimestamp"] = rfc3339(s.now().Add(time.Duration(delay) * time.Second))
	md["deletionGracePeriodSeconds"] = delay
	ri := reqInfo{res: resPods, ns: metaNamespace(pod), name: metaName(pod)}
	return s.store(ctx, ri, pod, kv.Rev)
}

// evict is the pods/eviction subresource (policy/v1 Eviction).
func (s *APIServer) evict(ctx context.Context, ri reqInfo, body []byte) (Obj, error) {
	if len(body) > 0 {
		ev, err := decodeObj(body)
		if err != nil {
			return nil, &apiError{400, "BadRequest", "invalid Eviction: " + err.Error(), nil}
		}
		if n := metaName(ev); n != "" && n != ri.name {
			return nil, &apiError{400, "BadRequest", "name in URL does not match name in Eviction object", nil}
		}
	}
	pod, kv, err := s.getKV(ctx, resPods, ri.ns, ri.name)
	if err != nil {
		return nil, err
	}
	if getStr(pod, "metadata", "deletionTimestamp") == "" && annotation(pod, AnnotationEvictionBlocked) == "true" {
		return nil, &apiError{429, "TooManyRequests", "Cannot evict pod as it would violate the pod's disruption budget.",
			Obj{"causes": []any{Obj{"reason": "DisruptionBudget", "message": fmt.Sprintf("The disruption budget %s-pdb needs 1 healthy pods and has 1 currently", ri.name)}}}}
	}
	if _, err := s.deletePod(ctx, pod, kv, -1); err != nil {
		return nil, err
	}
	return Obj{"kind": "Status", "apiVersion": "v1", "metadata": Obj{}, "status": "Success", "code": 201}, nil
}

// tokenRequest is the serviceaccounts/token subresource.
func (s *APIServer) tokenRequest(ctx context.Context, ri reqInfo, body []byte) (Obj, error) {
	sa, err := s.getLive(ctx, resServiceAccounts, ri.ns, ri.name)
	if err != nil {
		return nil, err
	}
	ttl := time.Hour
	if len(body) > 0 {
		if tr, err := decodeObj(body); err == nil {
			if v, ok := getMap(tr, "spec")["expirationSeconds"].(float64); ok && v >= 600 {
				ttl = time.Duration(v) * time.Second
			}
		}
	}
	tok, exp, err := s.serviceAccountToken(ri.ns, ri.name, getStr(sa, "metadata", "uid"), "", ttl)
	if err != nil {
		return nil, err
	}
	return Obj{"kind": "TokenRequest", "apiVersion": "authentication.k8s.io/v1",
		"metadata": Obj{"name": ri.name, "namespace": ri.ns, "creationTimestamp": nil},
		"spec":     Obj{"audiences": []string{"https://kubernetes.default.svc.cluster.local"}, "expirationSeconds": int(ttl.Seconds())},
		"status":   Obj{"token": tok, "expirationTimestamp": rfc3339(exp)}}, nil
}

// EnsureDefaults creates the namespaces every cluster has (idempotent).
func (s *APIServer) EnsureDefaults(ctx context.Context) error {
	sys := &userInfo{Name: "system:apiserver", Groups: []string{"system:masters"}}
	for _, ns := range []string{"default", "kube-system", "kube-public", "kube-node-lease"} {
		_, err := s.createObj(ctx, resNamespaces, "", Obj{"metadata": Obj{"name": ns}}, sys)
		var ae *apiError
		if err != nil && !(errors.As(err, &ae) && ae.Reason == "AlreadyExists") {
			return err
		}
	}
	s.bootstrapped.Store(true)
	return nil
}
