package k8sstandin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"go.yaml.in/yaml/v3"
)

var kubectlSpec = spec(
	[]string{"kubeconfig", "namespace", "output", "server", "token", "certificate-authority", "request-timeout", "selector",
		"field-selector", "filename", "timeout", "grace-period", "raw", "duration", "context", "v", "pod-selector", "chunk-size"},
	[]string{"all-namespaces", "insecure-skip-tls-verify", "ignore-daemonsets", "delete-emptydir-data", "delete-local-data", "force",
		"disable-eviction", "overwrite", "ignore-not-found", "client", "wait", "show-labels", "no-headers", "recursive", "validate"},
	map[string]string{"n": "namespace", "o": "output", "s": "server", "l": "selector", "f": "filename", "A": "all-namespaces", "v": "v", "R": "recursive"})

// kubectlErr carries an already formatted message ("Error from server ...").
type kubectlErr struct{ msg string }

func (e *kubectlErr) Error() string { return e.msg }

func serverErr(err error, action string) error {
	var se *StatusError
	if errors.As(err, &se) {
		reason := se.Reason
		if action != "" {
			return &kubectlErr{fmt.Sprintf("Error from server (%s): %s: %s", reason, action, se.Msg)}
		}
		return &kubectlErr{fmt.Sprintf("Error from server (%s): %s", reason, se.Msg)}
	}
	var ce *ConnError
	if errors.As(err, &ce) {
		return &kubectlErr{ce.Error()}
	}
	return err
}

type kubectl struct {
	*env
	p      *parsedArgs
	c      *Client
	ns     string
	server string
}

func kubectlMain(e *env, args []string) int {
	p, err := parseFlags(args, kubectlSpec)
	if err != nil {
		fmt.Fprintf(e.stderr, "error: %v\nSee 'kubectl --help' for usage.\n", err)
		return 1
	}
	k := &kubectl{env: e, p: p}
	if len(p.pos) == 0 {
		fmt.Fprint(e.stdout, "kubectl (k8s-standin) controls the Kubernetes cluster manager.\n\nCommands: get, apply, create, delete, cordon, uncordon, drain, label, cluster-info, version\n")
		return 0
	}
	cmd, rest := p.pos[0], p.pos[1:]
	if cmd == "version" && p.bool("client") {
		fmt.Fprintf(e.stdout, "Client Version: %s\nKustomize Version: v5.4.2\n", KubernetesVersion)
		return 0
	}
	if err := k.connect(); err != nil {
		fmt.Fprintln(e.stderr, err)
		return 1
	}
	switch cmd {
	case "get":
		err = k.get(rest)
	case "apply":
		err = k.apply(false)
	case "create":
		err = k.create(rest)
	case "delete":
		err = k.delete(rest)
	case "cordon", "uncordon":
		err = k.cordon(rest, cmd == "cordon")
	case "drain":
		err = k.drain(rest)
	case "label":
		err = k.label(rest)
	case "cluster-info":
		err = k.clusterInfo()
	case "version":
		err = k.version()
	default:
		err = fmt.Errorf("unknown command %q for \"kubectl\" (the k8s stand-in supports get, apply, create, delete, cordon, uncordon, drain, label, cluster-info, version)", cmd)
	}
	if err != nil {
		var ke *kubectlErr
		if errors.As(err, &ke) {
			fmt.Fprintln(e.stderr, ke.msg)
		} else {
			fmt.Fprintln(e.stderr, "error:", err)
		}
		return 1
	}
	return 0
}

func (k *kubectl) connect() error {
	p := k.p
	var cfg ClientConfig
	path := p.get("kubeconfig")
	if path == "" {
		path = defaultKubeconfigPath()
	}
	kc, err := LoadKubeconfig(path)
	switch {
	case err == nil:
		c, ns, err := ClientFromKubeconfig(kc)
		if err != nil {
			return &kubectlErr{"error: " + err.Error()}
		}
		k.c, k.ns = c, ns
	case p.get("kubeconfig") != "":
		return &kubectlErr{fmt.Sprintf("error: stat %s: no such file or directory", path)}
	case p.get("server") == "":
		return &kubectlErr{"The connection to the server localhost:8080 was refused - did you specify the right host or port?"}
	}
	if s := p.get("server"); s != "" {
		cfg.Server = s
		if k.c != nil {
			k.c.Server = strings.TrimRight(s, "/")
		}
	}
	if p.has("token") || p.has("certificate-authority") || p.bool("insecure-skip-tls-verify") || k.c == nil {
		if k.c != nil && cfg.Server == "" {
			cfg.Server = k.c.Server
		}
		cfg.Token = p.get("token")
		if k.c != nil && cfg.Token == "" {
			cfg.Token = k.c.Token
		}
		cfg.Insecure = p.bool("insecure-skip-tls-verify")
		if f := p.get("certificate-authority"); f != "" {
			b, err := os.ReadFile(f)
			if err != nil {
				return &kubectlErr{"error: " + err.Error()}
			}
			cfg.CAPEM = b
		} else if kc != nil {
			cl, _, _, _ := kc.Current()
			cfg.CAPEM, _ = cl.CAPEM()
		}
		c, err := NewClient(cfg)
		if err != nil {
			return &kubectlErr{"error: " + err.Error()}
		}
		k.c = c
	}
	if t := p.get("request-timeout"); t != "" && t != "0" {
		if d, err := time.ParseDuration(t); err == nil {
			k.c.HTTP.Timeout = d
		}
	}
	if ns := p.get("namespace"); ns != "" {
		k.ns = ns
	}
	if k.ns == "" {
		k.ns = "default"
	}
	k.server = k.c.Server
	return nil
}

func (k *kubectl) ctx() context.Context { return k.env.ctx }

// splitTypeName accepts "TYPE NAME..." or "TYPE/NAME ...".
func splitTypeName(args []string) (*resource, []string, error) {
	if len(args) == 0 {
		return nil, nil, errors.New("you must specify the type of resource to get")
	}
	if t, n, ok := strings.Cut(args[0], "/"); ok {
		r := resourceByArg(t)
		if r == nil {
			return nil, nil, fmt.Errorf("the server doesn't have a resource type %q", t)
		}
		names := []string{n}
		for _, a := range args[1:] {
			_, n2, _ := strings.Cut(a, "/")
			names = append(names, n2)
		}
		return r, names, nil
	}
	r := resourceByArg(strings.Split(args[0], ",")[0])
	if r == nil {
		return nil, nil, &kubectlErr{fmt.Sprintf("error: the server doesn't have a resource type %q", args[0])}
	}
	return r, args[1:], nil
}

func (k *kubectl) get(args []string) error {
	if raw := k.p.get("raw"); raw != "" {
		var b []byte
		if err := k.c.Do(k.ctx(), http.MethodGet, raw, nil, &b); err != nil {
			return serverErr(err, "")
		}
		_, err := k.stdout.Write(append(b, '\n'))
		return err
	}
	r, names, err := splitTypeName(args)
	if err != nil {
		return err
	}
	ns := k.ns
	allNS := k.p.bool("all-namespaces")
	if allNS || !r.Namespaced {
		ns = ""
	}
	var objs []Obj
	single := len(names) == 1
	if len(names) > 0 {
		var errs []error
		for _, n := range names {
			o, err := k.c.Get(k.ctx(), r, ns, n)
			if err != nil {
				if k.p.bool("ignore-not-found") && IsNotFound(err) {
					continue
				}
				errs = append(errs, serverErr(err, ""))
				continue
			}
			objs = append(objs, withKind(r, o))
		}
		if len(errs) > 0 {
			if len(objs) > 0 {
				_ = k.print(r, objs, false, allNS)
			}
			var msgs []string
			for _, e := range errs {
				msgs = append(msgs, e.Error())
			}
			return &kubectlErr{strings.Join(msgs, "\n")}
		}
	} else {
		objs, err = k.c.List(k.ctx(), r, ns, k.p.get("field-selector"), k.p.get("selector"))
		if err != nil {
			return serverErr(err, "")
		}
	}
	return k.print(r, objs, single, allNS)
}

func listObj(objs []Obj) Obj {
	items := make([]any, len(objs))
	for i, o := range objs {
		items[i] = o
	}
	return Obj{"apiVersion": "v1", "kind": "List", "items": items, "metadata": Obj{"resourceVersion": ""}}
}

func (k *kubectl) print(r *resource, objs []Obj, single, allNS bool) error {
	out := k.p.get("output")
	var data any = listObj(objs)
	if single && len(objs) == 1 {
		data = objs[0]
	}
	switch {
	case out == "json":
		b, _ := json.MarshalIndent(data, "", "    ")
		_, err := fmt.Fprintln(k.stdout, string(b))
		return err
	case out == "yaml":
		b, _ := yaml.Marshal(data)
		_, err := k.stdout.Write(b)
		return err
	case out == "name":
		for _, o := range objs {
			fmt.Fprintf(k.stdout, "%s/%s\n", r.qualified(), metaName(o))
		}
		return nil
	case strings.HasPrefix(out, "jsonpath="), strings.HasPrefix(out, "jsonpath-as-json="):
		_, tmpl, _ := strings.Cut(out, "=")
		s, err := renderJSONPath(strings.Trim(tmpl, "'"), data)
		if err != nil {
			return err
		}
		_, err = io.WriteString(k.stdout, s)
		return err
	case out == "" || out == "wide":
		if len(objs) == 0 {
			if r.Namespaced && !allNS {
				fmt.Fprintf(k.stderr, "No resources found in %s namespace.\n", k.ns)
			} else {
				fmt.Fprintln(k.stderr, "No resources found")
			}
			return nil
		}
		return k.table(r, objs, out == "wide", allNS)
	default:
		return fmt.Errorf("unable to match a printer suitable for the output format %q, allowed formats are: json,jsonpath,name,wide,yaml", out)
	}
}

func nodeStatus(o Obj) string {
	st := "Unknown"
	for _, c := range getSlice(o, "status", "conditions") {
		if cm, _ := c.(map[string]any); cm != nil && cm["type"] == "Ready" {
			switch cm["status"] {
			case "True":
				st = "Ready"
			case "False":
				st = "NotReady"
			default:
				st = "NotReady"
			}
		}
	}
	if getBool(o, "spec", "unschedulable") {
		st += ",SchedulingDisabled"
	}
	return st
}

func nodeRoles(o Obj) string {
	var roles []string
	for l := range labelsOf(o) {
		if r, ok := strings.CutPrefix(l, "node-role.kubernetes.io/"); ok && r != "" {
			roles = append(roles, r)
		}
	}
	sort.Strings(roles)
	if len(roles) == 0 {
		return "<none>"
	}
	return strings.Join(roles, ",")
}

func nodeIP(o Obj, typ string) string {
	for _, a := range getSlice(o, "status", "addresses") {
		if am, _ := a.(map[string]any); am != nil && am["type"] == typ {
			s, _ := am["address"].(string)
			return s
		}
	}
	return "<none>"
}

func objAge(o Obj) string {
	t, ok := parseTime(getStr(o, "metadata", "creationTimestamp"))
	if !ok {
		return "<unknown>"
	}
	return age(time.Since(t))
}

func (k *kubectl) table(r *resource, objs []Obj, wide, allNS bool) error {
	tw := tabwriter.NewWriter(k.stdout, 0, 8, 3, ' ', 0)
	var hdr []string
	row := func(o Obj) []string { return []string{metaName(o), objAge(o)} }
	switch r {
	case resNodes:
		hdr = []string{"NAME", "STATUS", "ROLES", "AGE", "VERSION"}
		if wide {
			hdr = append(hdr, "INTERNAL-IP", "EXTERNAL-IP", "OS-IMAGE", "KERNEL-VERSION", "CONTAINER-RUNTIME")
		}
		row = func(o Obj) []string {
			cols := []string{metaName(o), nodeStatus(o), nodeRoles(o), objAge(o), getStr(o, "status", "nodeInfo", "kubeletVersion")}
			if wide {
				cols = append(cols, nodeIP(o, "InternalIP"), nodeIP(o, "ExternalIP"), getStr(o, "status", "nodeInfo", "osImage"),
					getStr(o, "status", "nodeInfo", "kernelVersion"), getStr(o, "status", "nodeInfo", "containerRuntimeVersion"))
			}
			return cols
		}
	case resPods:
		hdr = []string{"NAME", "READY", "STATUS", "RESTARTS", "AGE"}
		if wide {
			hdr = append(hdr, "IP", "NODE", "NOMINATED NODE", "READINESS GATES")
		}
		row = func(o Obj) []string {
			st := getStr(o, "status", "phase")
			if getStr(o, "metadata", "deletionTimestamp") != "" {
				st = "Terminating"
			}
			n := len(getSlice(o, "spec", "containers"))
			ready := 0
			if st == "Running" {
				ready = n
			}
			cols := []string{metaName(o), fmt.Sprintf("%d/%d", ready, n), st, "0", objAge(o)}
			if wide {
				node := getStr(o, "spec", "nodeName")
				if node == "" {
					node = "<none>"
				}
				ip := getStr(o, "status", "podIP")
				if ip == "" {
					ip = "<none>"
				}
				cols = append(cols, ip, node, "<none>", "<none>")
			}
			return cols
		}
	case resNamespaces:
		hdr = []string{"NAME", "STATUS", "AGE"}
		row = func(o Obj) []string { return []string{metaName(o), getStr(o, "status", "phase"), objAge(o)} }
	case resSecrets:
		hdr = []string{"NAME", "TYPE", "DATA", "AGE"}
		row = func(o Obj) []string {
			return []string{metaName(o), getStr(o, "type"), fmt.Sprint(len(getMap(o, "data"))), objAge(o)}
		}
	case resServiceAccounts:
		hdr = []string{"NAME", "SECRETS", "AGE"}
		row = func(o Obj) []string { return []string{metaName(o), fmt.Sprint(len(getSlice(o, "secrets"))), objAge(o)} }
	case resConfigMaps:
		hdr = []string{"NAME", "DATA", "AGE"}
		row = func(o Obj) []string { return []string{metaName(o), fmt.Sprint(len(getMap(o, "data"))), objAge(o)} }
	case resClusterRoleBindings, resRoleBindings:
		hdr = []string{"NAME", "ROLE", "AGE"}
		row = func(o Obj) []string {
			return []string{metaName(o), getStr(o, "roleRef", "kind") + "/" + getStr(o, "roleRef", "name"), objAge(o)}
		}
	default:
		hdr = []string{"NAME", "AGE"}
	}
	if allNS && r.Namespaced {
		hdr = append([]string{"NAMESPACE"}, hdr...)
	}
	if !k.p.bool("no-headers") {
		fmt.Fprintln(tw, strings.Join(hdr, "\t"))
	}
	for _, o := range objs {
		cols := row(o)
		if allNS && r.Namespaced {
			cols = append([]string{metaNamespace(o)}, cols...)
		}
		fmt.Fprintln(tw, strings.Join(cols, "\t"))
	}
	return tw.Flush()
}

// readManifestFiles reads -f arguments (files, directories, "-").
func (k *kubectl) readManifestFiles() ([]Obj, []string, error) {
	files := k.p.flags["filename"]
	if len(files) == 0 {
		return nil, nil, errors.New("must specify one of -f and -k")
	}
	var objs []Obj
	var sources []string
	for _, f := range files {
		var paths []string
		if f == "-" {
			paths = []string{"-"}
		} else if st, err := os.Stat(f); err == nil && st.IsDir() {
			for _, ext := range []string{"*.yaml", "*.yml", "*.json"} {
				m, _ := filepath.Glob(filepath.Join(f, ext))
				paths = append(paths, m...)
			}
			sort.Strings(paths)
		} else {
			paths = []string{f}
		}
		for _, path := range paths {
			var b []byte
			var err error
			if path == "-" {
				b, err = io.ReadAll(k.stdin)
			} else {
				b, err = os.ReadFile(path)
			}
			if err != nil {
				return nil, nil, fmt.Errorf("the path %q does not exist", path)
			}
			docs, err := decodeManifests(b)
			if err != nil {
				return nil, nil, fmt.Errorf("error parsing %s: %v", path, err)
			}
			for _, d := range docs {
				objs = append(objs, d)
				sources = append(sources, path)
			}
		}
	}
	return objs, sources, nil
}

// decodeManifests parses YAML or JSON documents, expanding List kinds.
func decodeManifests(b []byte) ([]Obj, error) {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var out []Obj
	for {
		var doc any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if doc == nil {
			continue
		}
		// Round-trip through JSON for JSON-shaped maps and numbers.
		jb, err := json.Marshal(doc)
		if err != nil {
			return nil, err
		}
		o, err := decodeObj(jb)
		if err != nil {
			return nil, err
		}
		if strings.HasSuffix(getStr(o, "kind"), "List") && o["items"] != nil {
			for _, it := range getSlice(o, "items") {
				if m, ok := it.(map[string]any); ok {
					out = append(out, m)
				}
			}
			continue
		}
		out = append(out, o)
	}
	return out, nil
}

func (k *kubectl) objTarget(o Obj) (*resource, string, error) {
	r := resourceByKind(getStr(o, "apiVersion"), getStr(o, "kind"))
	if r == nil {
		return nil, "", fmt.Errorf("resource mapping not found for name: %q namespace: %q: no matches for kind %q in version %q (the k8s stand-in serves Node, Namespace, Pod, Secret, ServiceAccount, ConfigMap, RBAC and CSR objects)",
			metaName(o), metaNamespace(o), getStr(o, "kind"), getStr(o, "apiVersion"))
	}
	ns := ""
	if r.Namespaced {
		ns = metaNamespace(o)
		if ns == "" {
			ns = k.ns
		}
		if p := k.p.get("namespace"); p != "" && metaNamespace(o) != "" && p != metaNamespace(o) {
			return nil, "", fmt.Errorf("the namespace from the provided object %q does not match the namespace %q. You must pass '--namespace=%s' to perform this operation.", metaNamespace(o), p, metaNamespace(o))
		}
	}
	return r, ns, nil
}

func stripServerFields(o Obj) Obj {
	o = deepCopy(o)
	if md := getMap(o, "metadata"); md != nil {
		for _, f := range []string{"resourceVersion", "uid", "creationTimestamp", "managedFields", "generation"} {
			delete(md, f)
		}
	}
	delete(o, "status")
	return o
}

func (k *kubectl) apply(_ bool) error {
	objs, sources, err := k.readManifestFiles()
	if err != nil {
		return err
	}
	var errs []string
	for i, o := range objs {
		r, ns, err := k.objTarget(o)
		if err != nil {
			errs = append(errs, "error: "+err.Error())
			continue
		}
		name := metaName(o)
		cur, err := k.c.Get(k.ctx(), r, ns, name)
		switch {
		case IsNotFound(err):
			if _, err := k.c.Create(k.ctx(), r, ns, o); err != nil {
				errs = append(errs, serverErr(err, fmt.Sprintf("error when creating %q", sources[i])).Error())
				continue
			}
			fmt.Fprintf(k.stdout, "%s/%s created\n", r.qualified(), name)
		case err != nil:
			errs = append(errs, serverErr(err, fmt.Sprintf("error when retrieving current configuration of %q", sources[i])).Error())
		default:
			applied := stripServerFields(o)
			merged := mergePatch(deepCopy(cur), deepCopy(applied))
			if reflect.DeepEqual(merged, cur) {
				fmt.Fprintf(k.stdout, "%s/%s unchanged\n", r.qualified(), name)
				continue
			}
			if _, err := k.c.Patch(k.ctx(), r, ns, name, applied); err != nil {
				errs = append(errs, serverErr(err, fmt.Sprintf("error when applying patch to %q", sources[i])).Error())
				continue
			}
			fmt.Fprintf(k.stdout, "%s/%s configured\n", r.qualified(), name)
		}
	}
	if len(errs) > 0 {
		return &kubectlErr{strings.Join(errs, "\n")}
	}
	return nil
}

func (k *kubectl) create(args []string) error {
	if len(args) > 0 {
		switch args[0] {
		case "token":
			if len(args) < 2 {
				return errors.New("exactly one SERVICE_ACCOUNT argument is required")
			}
			body := Obj{"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": Obj{}}
			if d := k.p.get("duration"); d != "" {
				dur, err := time.ParseDuration(d)
				if err != nil {
					return err
				}
				ensureMap(body, "spec")["expirationSeconds"] = int(dur.Seconds())
			}
			var out Obj
			if err := k.c.Do(k.ctx(), http.MethodPost, objPath(resServiceAccounts, k.ns, args[1])+"/token", body, &out); err != nil {
				return serverErr(err, "")
			}
			fmt.Fprintln(k.stdout, getStr(out, "status", "token"))
			return nil
		case "namespace", "ns", "serviceaccount", "sa":
			if len(args) < 2 {
				return errors.New("exactly one NAME is required")
			}
			r := resourceByArg(args[0])
			if _, err := k.c.Create(k.ctx(), r, k.ns, Obj{"metadata": Obj{"name": args[1]}}); err != nil {
				return serverErr(err, "")
			}
			fmt.Fprintf(k.stdout, "%s/%s created\n", r.qualified(), args[1])
			return nil
		}
	}
	objs, sources, err := k.readManifestFiles()
	if err != nil {
		return err
	}
	var errs []string
	for i, o := range objs {
		r, ns, err := k.objTarget(o)
		if err != nil {
			errs = append(errs, "error: "+err.Error())
			continue
		}
		if _, err := k.c.Create(k.ctx(), r, ns, o); err != nil {
			errs = append(errs, serverErr(err, fmt.Sprintf("error when creating %q", sources[i])).Error())
			continue
		}
		fmt.Fprintf(k.stdout, "%s/%s created\n", r.qualified(), metaName(o))
	}
	if len(errs) > 0 {
		return &kubectlErr{strings.Join(errs, "\n")}
	}
	return nil
}

func (k *kubectl) delete(args []string) error {
	type target struct {
		r        *resource
		ns, name string
	}
	var targets []target
	if k.p.has("filename") {
		objs, _, err := k.readManifestFiles()
		if err != nil {
			return err
		}
		for _, o := range objs {
			r, ns, err := k.objTarget(o)
			if err != nil {
				return err
			}
			targets = append(targets, target{r, ns, metaName(o)})
		}
	} else {
		r, names, err := splitTypeName(args)
		if err != nil {
			return err
		}
		if len(names) == 0 {
			return errors.New("resource(s) were provided, but no name was specified")
		}
		for _, n := range names {
			targets = append(targets, target{r, k.ns, n})
		}
	}
	var errs []string
	for _, t := range targets {
		if err := k.c.Delete(k.ctx(), t.r, t.ns, t.name); err != nil {
			if IsNotFound(err) && k.p.bool("ignore-not-found") {
				continue
			}
			errs = append(errs, serverErr(err, "").Error())
			continue
		}
		fmt.Fprintf(k.stdout, "%s %q deleted\n", t.r.qualified(), t.name)
	}
	if len(errs) > 0 {
		return &kubectlErr{strings.Join(errs, "\n")}
	}
	return nil
}

func nodeArgs(args []string) ([]string, error) {
	if len(args) == 0 {
		return nil, errors.New("resource(s) were provided, but no name was specified")
	}
	var out []string
	for _, a := range args {
		if t, n, ok := strings.Cut(a, "/"); ok {
			if resourceByArg(t) != resNodes {
				return nil, fmt.Errorf("%s is not a node", a)
			}
			a = n
		}
		out = append(out, a)
	}
	return out, nil
}

func (k *kubectl) cordon(args []string, on bool) error {
	nodes, err := nodeArgs(args)
	if err != nil {
		return err
	}
	for _, n := range nodes {
		if err := k.setUnschedulable(n, on); err != nil {
			return err
		}
	}
	return nil
}

func (k *kubectl) setUnschedulable(node string, on bool) error {
	cur, err := k.c.Get(k.ctx(), resNodes, "", node)
	if err != nil {
		return serverErr(err, "")
	}
	word := map[bool]string{true: "cordoned", false: "uncordoned"}[on]
	if getBool(cur, "spec", "unschedulable") == on {
		fmt.Fprintf(k.stdout, "node/%s already %s\n", node, word)
		return nil
	}
	var v any = true
	if !on {
		v = nil
	}
	if _, err := k.c.Patch(k.ctx(), resNodes, "", node, Obj{"spec": Obj{"unschedulable": v}}); err != nil {
		return serverErr(err, "")
	}
	fmt.Fprintf(k.stdout, "node/%s %s\n", node, word)
	return nil
}

func (k *kubectl) label(args []string) error {
	r, rest, err := splitTypeName(args)
	if err != nil {
		return err
	}
	var names []string
	labels := Obj{}
	for _, a := range rest {
		switch {
		case strings.Contains(a, "="):
			kk, v, _ := strings.Cut(a, "=")
			labels[kk] = v
		case strings.HasSuffix(a, "-"):
			labels[strings.TrimSuffix(a, "-")] = nil
		default:
			names = append(names, a)
		}
	}
	if len(names) == 0 || len(labels) == 0 {
		return errors.New("at least one resource name and one label update is required")
	}
	for _, n := range names {
		cur, err := k.c.Get(k.ctx(), r, k.ns, n)
		if err != nil {
			return serverErr(err, "")
		}
		existing := labelsOf(cur)
		for kk, v := range labels {
			if old, ok := existing[kk]; ok && v != nil && old != v && !k.p.bool("overwrite") {
				return fmt.Errorf("'%s' already has a value (%s), and --overwrite is false", kk, old)
			}
		}
		if _, err := k.c.Patch(k.ctx(), r, k.ns, n, Obj{"metadata": Obj{"labels": labels}}); err != nil {
			return serverErr(err, "")
		}
		fmt.Fprintf(k.stdout, "%s/%s labeled\n", r.qualified(), n)
	}
	return nil
}

func (k *kubectl) clusterInfo() error {
	var v Obj
	if err := k.c.Do(k.ctx(), http.MethodGet, "/api", nil, &v); err != nil {
		return serverErr(err, "")
	}
	fmt.Fprintf(k.stdout, "Kubernetes control plane is running at %s\nCoreDNS is running at %s/api/v1/namespaces/kube-system/services/kube-dns:dns/proxy\n\n"+
		"To further debug and diagnose cluster problems, use 'kubectl cluster-info dump'.\n", k.server, k.server)
	return nil
}

func (k *kubectl) version() error {
	var v Obj
	if err := k.c.Do(k.ctx(), http.MethodGet, "/version", nil, &v); err != nil {
		fmt.Fprintf(k.stdout, "Client Version: %s\nKustomize Version: v5.4.2\n", KubernetesVersion)
		return serverErr(err, "")
	}
	fmt.Fprintf(k.stdout, "Client Version: %s\nKustomize Version: v5.4.2\nServer Version: %s\n", KubernetesVersion, getStr(v, "gitVersion"))
	return nil
}

// drain: cordon, then evict (or delete) the node's pods, waiting for them to
// go, with kubectl's filters, warnings, retry and global timeout.
func (k *kubectl) drain(args []string) error {
	nodes, err := nodeArgs(args)
	if err != nil {
		return err
	}
	var timeout time.Duration
	if t := k.p.get("timeout"); t != "" {
		if timeout, err = time.ParseDuration(t); err != nil {
			return fmt.Errorf("invalid argument %q for \"--timeout\" flag: %v", t, err)
		}
	}
	for _, node := range nodes {
		if err := k.setUnschedulable(node, true); err != nil {
			return err
		}
		if err := k.drainNode(node, timeout); err != nil {
			fmt.Fprintf(k.stderr, "error: unable to drain node %q due to error: %v, continuing command...\n", node, err)
			fmt.Fprintf(k.stderr, "There are pending nodes to be drained:\n %s\n", node)
			return &kubectlErr{"error: " + err.Error()}
		}
		fmt.Fprintf(k.stdout, "node/%s drained\n", node)
	}
	return nil
}

func controllerOf(o Obj) (kind string) {
	for _, r := range getSlice(o, "metadata", "ownerReferences") {
		if m, _ := r.(map[string]any); m != nil {
			if c, _ := m["controller"].(bool); c {
				kind, _ = m["kind"].(string)
				return kind
			}
		}
	}
	return ""
}

func hasEmptyDir(o Obj) bool {
	for _, v := range getSlice(o, "spec", "volumes") {
		if m, _ := v.(map[string]any); m != nil && m["emptyDir"] != nil {
			return true
		}
	}
	return false
}

func (k *kubectl) drainNode(node string, timeout time.Duration) error {
	ctx := k.ctx()
	pods, err := k.c.List(ctx, resPods, "", "spec.nodeName="+node, "")
	if err != nil {
		return serverErr(err, "")
	}
	var toEvict []Obj
	var dsWarn, forceWarn, localWarn, dsErr, unmanagedErr, localErr []string
	for _, p := range pods {
		id := metaNamespace(p) + "/" + metaName(p)
		if annotation(p, "kubernetes.io/config.mirror") != "" {
			continue
		}
		phase := getStr(p, "status", "phase")
		finished := phase == "Succeeded" || phase == "Failed"
		switch ctrl := controllerOf(p); {
		case ctrl == "DaemonSet" && !finished:
			if k.p.bool("ignore-daemonsets") {
				dsWarn = append(dsWarn, id)
			} else {
				dsErr = append(dsErr, id)
			}
			continue
		case ctrl == "" && !finished:
			if k.p.bool("force") {
				forceWarn = append(forceWarn, id)
			} else {
				unmanagedErr = append(unmanagedErr, id)
			}
		}
		if hasEmptyDir(p) && !finished {
			if k.p.bool("delete-emptydir-data") || k.p.bool("delete-local-data") {
				localWarn = append(localWarn, id)
			} else {
				localErr = append(localErr, id)
			}
		}
		toEvict = append(toEvict, p)
	}
	var errs []string
	if len(unmanagedErr) > 0 {
		errs = append(errs, "cannot delete Pods that declare no controller (use --force to override): "+strings.Join(unmanagedErr, ", "))
	}
	if len(dsErr) > 0 {
		errs = append(errs, "cannot delete DaemonSet-managed Pods (use --ignore-daemonsets to ignore): "+strings.Join(dsErr, ", "))
	}
	if len(localErr) > 0 {
		errs = append(errs, "cannot delete Pods with local storage (use --delete-emptydir-data to override): "+strings.Join(localErr, ", "))
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, ", "))
	}
	var warns []string
	if len(dsWarn) > 0 {
		warns = append(warns, "ignoring DaemonSet-managed Pods: "+strings.Join(dsWarn, ", "))
	}
	if len(forceWarn) > 0 {
		warns = append(warns, "deleting Pods that declare no controller: "+strings.Join(forceWarn, ", "))
	}
	if len(localWarn) > 0 {
		warns = append(warns, "deleting Pods with local storage: "+strings.Join(localWarn, ", "))
	}
	if len(warns) > 0 {
		fmt.Fprintf(k.stderr, "Warning: %s\n", strings.Join(warns, "; "))
	}
	if len(toEvict) == 0 {
		return nil
	}
	dctx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		dctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var failed []string
	var pending []Obj
	for _, p := range toEvict {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := k.evictAndWait(dctx, p, timeout); err != nil {
				mu.Lock()
				failed = append(failed, err.Error())
				pending = append(pending, p)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(failed) == 0 {
		return nil
	}
	sort.Strings(failed)
	msg := "[" + strings.Join(failed, ", ") + "]"
	fmt.Fprintf(k.stderr, "There are pending pods in node %q when an error occurred: %s\n", node, msg)
	for _, p := range pending {
		fmt.Fprintf(k.stderr, "pod/%s\n", metaName(p))
	}
	return errors.New(msg)
}

func (k *kubectl) evictAndWait(ctx context.Context, p Obj, timeout time.Duration) error {
	ns, name, uid := metaNamespace(p), metaName(p), getStr(p, "metadata", "uid")
	what := fmt.Sprintf("pods/%q -n %q", name, ns)
	timedOut := func(action string) error {
		return fmt.Errorf("error when %s %s: global timeout reached: %v", action, what, timeout)
	}
	disable := k.p.bool("disable-eviction")
	if !disable {
		fmt.Fprintf(k.stdout, "evicting pod %s/%s\n", ns, name)
	}
	for {
		var err error
		if disable {
			err = k.c.Delete(ctx, resPods, ns, name)
		} else {
			body := Obj{"apiVersion": "policy/v1", "kind": "Eviction", "metadata": Obj{"name": name, "namespace": ns}}
			err = k.c.Do(ctx, http.MethodPost, objPath(resPods, ns, name)+"/eviction", body, nil)
		}
		if err == nil || IsNotFound(err) {
			break
		}
		if ctx.Err() != nil {
			return timedOut(map[bool]string{true: "deleting", false: "evicting"}[disable])
		}
		var se *StatusError
		if errors.As(err, &se) && se.Code == http.StatusTooManyRequests {
			fmt.Fprintf(k.stderr, "error when evicting %s (will retry after 5s): %s\n", what, se.Msg)
			select {
			case <-ctx.Done():
				return timedOut("evicting")
			case <-time.After(5 * time.Second):
			}
			continue
		}
		return fmt.Errorf("error when evicting %s: %v", what, serverErr(err, ""))
	}
	for {
		cur, err := k.c.Get(ctx, resPods, ns, name)
		if IsNotFound(err) || (err == nil && getStr(cur, "metadata", "uid") != uid) {
			if disable {
				fmt.Fprintf(k.stdout, "pod/%s deleted\n", name)
			} else {
				fmt.Fprintf(k.stdout, "pod/%s evicted\n", name)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("error when waiting for pod %q in namespace %q to terminate: global timeout reached: %v", name, ns, timeout)
		case <-time.After(time.Second):
		}
	}
}
