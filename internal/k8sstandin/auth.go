package k8sstandin

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"
)

// userInfo is an authenticated identity.
type userInfo struct {
	Name   string
	Groups []string
}

func (u *userInfo) in(group string) bool { return slices.Contains(u.Groups, group) }

var anonymous = &userInfo{Name: "system:anonymous", Groups: []string{"system:unauthenticated"}}

var errUnauthorized = errors.New("Unauthorized")

var bootstrapTokenRE = regexp.MustCompile(`^([a-z0-9]{6})\.([a-z0-9]{16})$`)

// authenticate finds who sent the request: a client certificate verified
// against the cluster CA, a bearer token (bootstrap token or service account
// JWT), or nobody (system:anonymous).
func (s *APIServer) authenticate(r *http.Request) (*userInfo, error) {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, tok, _ := strings.Cut(h, " ")
		tok = strings.TrimSpace(tok)
		if !strings.EqualFold(scheme, "Bearer") || tok == "" {
			return nil, errUnauthorized
		}
		return s.authToken(r.Context(), tok)
	}
	if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 && len(r.TLS.VerifiedChains[0]) > 0 {
		c := r.TLS.VerifiedChains[0][0]
		groups := append([]string(nil), c.Subject.Organization...)
		return &userInfo{Name: c.Subject.CommonName, Groups: append(groups, "system:authenticated")}, nil
	}
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		return nil, errUnauthorized
	}
	return anonymous, nil
}

func (s *APIServer) authToken(ctx context.Context, tok string) (*userInfo, error) {
	if m := bootstrapTokenRE.FindStringSubmatch(tok); m != nil {
		sec, err := s.getLive(ctx, resSecrets, "kube-system", "bootstrap-token-"+m[1])
		if err != nil {
			return nil, errUnauthorized
		}
		if secretData(sec, "token-secret") == "" ||
			subtle.ConstantTimeCompare([]byte(secretData(sec, "token-secret")), []byte(m[2])) != 1 ||
			secretData(sec, "usage-bootstrap-authentication") != "true" {
			return nil, errUnauthorized
		}
		groups := []string{"system:bootstrappers"}
		for _, g := range strings.Split(secretData(sec, "auth-extra-groups"), ",") {
			if g = strings.TrimSpace(g); g != "" {
				groups = append(groups, g)
			}
		}
		return &userInfo{Name: "system:bootstrap:" + m[1], Groups: append(groups, "system:authenticated")}, nil
	}
	if strings.Count(tok, ".") == 2 && s.SAPub != nil {
		claims, err := verifyJWT(tok, s.SAPub)
		if err != nil {
			return nil, errUnauthorized
		}
		ns, _ := claims["kubernetes.io/serviceaccount/namespace"].(string)
		sa, _ := claims["kubernetes.io/serviceaccount/service-account.name"].(string)
		if ns == "" || sa == "" {
			return nil, errUnauthorized
		}
		if exp, ok := claims["exp"].(float64); ok && s.now().Unix() >= int64(exp) {
			return nil, errUnauthorized
		}
		// Legacy (Secret-based) tokens live as long as their Secret holds them.
		if secName, _ := claims["kubernetes.io/serviceaccount/secret.name"].(string); secName != "" {
			sec, err := s.getLive(ctx, resSecrets, ns, secName)
			if err != nil || secretData(sec, "token") != tok {
				return nil, errUnauthorized
			}
		}
		if _, err := s.getLive(ctx, resServiceAccounts, ns, sa); err != nil {
			return nil, errUnauthorized
		}
		return &userInfo{
			Name:   "system:serviceaccount:" + ns + ":" + sa,
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
		}, nil
	}
	return nil, errUnauthorized
}

// secretData returns the decoded value of a Secret's data key.
func secretData(sec Obj, key string) string {
	v := getStr(sec, "data", key)
	b, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		return ""
	}
	return string(b)
}

// JWTs for service accounts (RS256, signed with sa.key like kube-apiserver).

func keyID(pub crypto.PublicKey) string {
	der, _ := x509.MarshalPKIXPublicKey(pub)
	sum := sha256.Sum256(der)
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

func signJWT(key crypto.Signer, claims map[string]any) (string, error) {
	if _, ok := key.(*rsa.PrivateKey); !ok {
		return "", fmt.Errorf("service account signing key must be RSA, got %T", key)
	}
	hdr, _ := json.Marshal(map[string]string{"alg": "RS256", "kid": keyID(key.Public())})
	body, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	signing := base64.RawURLEncoding.EncodeToString(hdr) + "." + base64.RawURLEncoding.EncodeToString(body)
	sum := sha256.Sum256([]byte(signing))
	sig, err := key.Sign(rand.Reader, sum[:], crypto.SHA256)
	if err != nil {
		return "", err
	}
	return signing + "." + base64.RawURLEncoding.EncodeToString(sig), nil
}

func verifyJWT(tok string, pub crypto.PublicKey) (map[string]any, error) {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return nil, errors.New("malformed token")
	}
	hb, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil {
		return nil, err
	}
	var hdr struct {
		Alg string `json:"alg"`
	}
	if err := json.Unmarshal(hb, &hdr); err != nil || hdr.Alg != "RS256" {
		return nil, errors.New("unsupported token")
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return nil, err
	}
	rpub, ok := pub.(*rsa.PublicKey)
	if !ok {
		return nil, errors.New("not an RSA key")
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(rpub, crypto.SHA256, sum[:], sig); err != nil {
		return nil, err
	}
	cb, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil, err
	}
	var claims map[string]any
	if err := json.Unmarshal(cb, &claims); err != nil {
		return nil, err
	}
	return claims, nil
}

// serviceAccountToken mints a token for a service account: a legacy one bound
// to a Secret (no expiry) when secretName is set, else one expiring after ttl.
func (s *APIServer) serviceAccountToken(ns, sa, saUID, secretName string, ttl time.Duration) (string, time.Time, error) {
	if s.SAKey == nil {
		return "", time.Time{}, errors.New("no service account signing key")
	}
	now := s.now()
	claims := map[string]any{
		"iss":                                    "kubernetes/serviceaccount",
		"sub":                                    "system:serviceaccount:" + ns + ":" + sa,
		"kubernetes.io/serviceaccount/namespace": ns,
		"kubernetes.io/serviceaccount/service-account.name": sa,
		"kubernetes.io/serviceaccount/service-account.uid":  saUID,
		"iat": now.Unix(),
	}
	var exp time.Time
	if secretName != "" {
		claims["kubernetes.io/serviceaccount/secret.name"] = secretName
	} else {
		exp = now.Add(ttl)
		claims["exp"] = exp.Unix()
		claims["aud"] = []string{"https://kubernetes.default.svc.cluster.local"}
		claims["jti"] = newUID()
	}
	t, err := signJWT(s.SAKey, claims)
	return t, exp, err
}

// authorization

type attrs struct {
	verb     string // get list create update patch delete
	group    string
	resource string // with "/sub" for subresources
	ns       string
	name     string
	path     string // for non-resource requests
}

func (a attrs) String() string {
	if a.resource == "" {
		return fmt.Sprintf("%s path %q", a.verb, a.path)
	}
	return fmt.Sprintf("%s %s/%s %s/%s", a.verb, a.group, a.resource, a.ns, a.name)
}

type rule struct {
	APIGroups       []string `json:"apiGroups"`
	Resources       []string `json:"resources"`
	Verbs           []string `json:"verbs"`
	ResourceNames   []string `json:"resourceNames"`
	NonResourceURLs []string `json:"nonResourceURLs"`
}

func matchAny(list []string, v string) bool {
	for _, x := range list {
		if x == "*" || x == v {
			return true
		}
	}
	return false
}

func (r rule) allows(a attrs) bool {
	if !matchAny(r.Verbs, a.verb) {
		return false
	}
	if a.resource == "" {
		for _, u := range r.NonResourceURLs {
			if u == "*" || u == a.path || (strings.HasSuffix(u, "*") && strings.HasPrefix(a.path, strings.TrimSuffix(u, "*"))) {
				return true
			}
		}
		return false
	}
	if !matchAny(r.APIGroups, a.group) || !matchAny(r.Resources, a.resource) {
		return false
	}
	return len(r.ResourceNames) == 0 || slices.Contains(r.ResourceNames, a.name)
}

// builtinClusterRoles are the default roles the stand-in knows without a
// stored object (the ones the drivers bind to).
var builtinClusterRoles = map[string][]rule{
	"cluster-admin": {
		{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}},
		{NonResourceURLs: []string{"*"}, Verbs: []string{"*"}},
	},
	"admin": {{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}},
	"edit":  {{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}},
	"view": {{APIGroups: []string{"", "rbac.authorization.k8s.io", "certificates.k8s.io"},
		Resources: []string{"nodes", "namespaces", "pods", "serviceaccounts", "configmaps", "roles", "rolebindings", "clusterroles", "clusterrolebindings"},
		Verbs:     []string{"get", "list", "watch"}}},
}

var publicPaths = []string{"/healthz", "/livez", "/readyz", "/version"}

// authorize applies the built-in policies and then RBAC.
func (s *APIServer) authorize(ctx context.Context, u *userInfo, a attrs) bool {
	if u.in("system:masters") {
		return true
	}
	if a.resource == "" {
		if slices.Contains(publicPaths, a.path) {
			return true
		}
		if u.in("system:authenticated") && (a.path == "/api" || a.path == "/apis" || strings.HasPrefix(a.path, "/api/") || strings.HasPrefix(a.path, "/apis/")) {
			return true
		}
	}
	// Anyone may read the cluster-info ConfigMap (token discovery).
	if a.verb == "get" && a.group == "" && a.resource == "configmaps" && a.ns == "kube-public" && a.name == "cluster-info" {
		return true
	}
	if u.in("system:bootstrappers") {
		switch {
		case a.group == "certificates.k8s.io" && a.resource == "certificatesigningrequests" && (a.verb == "create" || a.verb == "get"):
			return true
		case a.group == "" && a.resource == "configmaps" && a.ns == "kube-system" && a.verb == "get":
			return true
		case a.group == "" && a.resource == "nodes" && a.verb == "get":
			return true
		case a.group == "" && a.resource == "secrets" && a.ns == "kube-system" && a.name == "kubeadm-certs" && a.verb == "get" &&
			u.in("system:bootstrappers:kubeadm:default-node-token"):
			return true
		}
	}
	if u.in("system:nodes") {
		switch {
		case a.group == "" && (a.resource == "nodes" || a.resource == "nodes/status"):
			return a.verb != "delete"
		case a.group == "" && a.resource == "pods" && (a.verb == "get" || a.verb == "list" || a.verb == "create"):
			return true
		case a.group == "" && (a.resource == "configmaps" || a.resource == "namespaces") && (a.verb == "get" || a.verb == "list"):
			return true
		case a.group == "certificates.k8s.io" && a.resource == "certificatesigningrequests" && (a.verb == "create" || a.verb == "get"):
			return true
		}
	}
	return s.rbacAllows(ctx, u, a)
}

func subjectMatches(subj Obj, u *userInfo, bindingNS string) bool {
	kind, _ := subj["kind"].(string)
	name, _ := subj["name"].(string)
	switch kind {
	case "User":
		return name == u.Name
	case "Group":
		return u.in(name)
	case "ServiceAccount":
		ns, _ := subj["namespace"].(string)
		if ns == "" {
			ns = bindingNS
		}
		return u.Name == "system:serviceaccount:"+ns+":"+name
	}
	return false
}

func (s *APIServer) rolesRules(ctx context.Context, roleRef Obj, bindingNS string) []rule {
	kind, _ := roleRef["kind"].(string)
	name, _ := roleRef["name"].(string)
	var res *resource
	ns := ""
	switch kind {
	case "ClusterRole":
		res = resClusterRoles
	case "Role":
		res, ns = resRoles, bindingNS
	default:
		return nil
	}
	obj, err := s.getLive(ctx, res, ns, name)
	if err != nil {
		if kind == "ClusterRole" {
			return builtinClusterRoles[name]
		}
		return nil
	}
	var rules []rule
	b, _ := json.Marshal(obj["rules"])
	_ = json.Unmarshal(b, &rules)
	return rules
}

func (s *APIServer) rbacAllows(ctx context.Context, u *userInfo, a attrs) bool {
	check := func(bindings []Obj, bindingNS func(Obj) string) bool {
		for _, b := range bindings {
			ok := false
			for _, sj := range getSlice(b, "subjects") {
				if m, _ := sj.(map[string]any); m != nil && subjectMatches(m, u, bindingNS(b)) {
					ok = true
					break
				}
			}
			if !ok {
				continue
			}
			rr, _ := b["roleRef"].(map[string]any)
			for _, r := range s.rolesRules(ctx, rr, bindingNS(b)) {
				if r.allows(a) {
					return true
				}
			}
		}
		return false
	}
	crbs, _ := s.listLive(ctx, resClusterRoleBindings, "")
	if check(crbs, func(Obj) string { return "" }) {
		return true
	}
	if a.ns != "" {
		rbs, _ := s.listLive(ctx, resRoleBindings, a.ns)
		if check(rbs, metaNamespace) {
			return true
		}
	}
	return false
}
