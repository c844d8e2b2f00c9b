package kubernetes

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
)

// The additionalParams of an instantiation this driver reads (Tacker v1's
// names).
const (
	ParamDefFiles   = "lcm-kubernetes-def-files"
	ParamNamespace  = "namespace"
	ParamVduMapping = "vdu_mapping"
)

// Labels and annotations the driver puts on every object it creates: the
// objects of an instance are found, adopted on retry and deleted by them,
// and an object the driver did not make is never changed or deleted.
const (
	LabelManagedBy      = "app.kubernetes.io/managed-by"
	ManagedBy           = "mini-vnfm"
	AnnotationInstance  = "mini-vnfm.io/vnf-instance-id"
	AnnotationManifest  = "mini-vnfm.io/manifest"
	deletionCostAnnot   = "controller.kubernetes.io/pod-deletion-cost"
	defaultNamespace    = "default"
	maxDefFiles         = 64
	maxManifestNodes    = 20000
	maxManifestDepth    = 64
	defaultMaxFileBytes = 1 << 20
	defaultMaxTotal     = 8 << 20
	defaultMaxDocs      = 500
)

// Limits bound what an instantiation's manifests may be, so that a hostile
// package (huge files, alias bombs, thousands of documents) is refused
// before anything is created.
type Limits struct {
	MaxFileBytes  int64 // one manifest file (default 1 MiB)
	MaxTotalBytes int64 // all files of a request (default 8 MiB)
	MaxDocuments  int   // all documents of a request (default 500)
}

func (l Limits) withDefaults() Limits {
	if l.MaxFileBytes <= 0 {
		l.MaxFileBytes = defaultMaxFileBytes
	}
	if l.MaxTotalBytes <= 0 {
		l.MaxTotalBytes = defaultMaxTotal
	}
	if l.MaxDocuments <= 0 {
		l.MaxDocuments = defaultMaxDocs
	}
	return l
}

// params are the driver's additionalParams of an instantiation.
type params struct {
	Files     []string
	Namespace string
	// VduMapping maps a VDU id to the workload backing it (Tacker's
	// vdu_mapping), instead of matching VDU properties.name.
	VduMapping map[string]workloadRef
}

type workloadRef struct{ Kind, Name string }

func readParams(ap map[string]any) (params, error) {
	var p params
	raw, ok := ap[ParamDefFiles]
	if !ok {
		return p, fmt.Errorf("additionalParams.%s is required: the list of the package's Kubernetes manifests to deploy, e.g. [\"Files/kubernetes/deployment.yaml\"]", ParamDefFiles)
	}
	list, ok := raw.([]any)
	if !ok || len(list) == 0 {
		return p, fmt.Errorf("additionalParams.%s must be a non-empty list of manifest paths in the package, e.g. [\"Files/kubernetes/deployment.yaml\"]", ParamDefFiles)
	}
	if len(list) > maxDefFiles {
		return p, fmt.Errorf("additionalParams.%s lists %d files; at most %d are allowed", ParamDefFiles, len(list), maxDefFiles)
	}
	for i, e := range list {
		s, ok := e.(string)
		if !ok || strings.TrimSpace(s) == "" {
			return p, fmt.Errorf("additionalParams.%s[%d] must be a manifest path in the package (a string)", ParamDefFiles, i)
		}
		if strings.Contains(s, "://") {
			return p, fmt.Errorf("additionalParams.%s[%d] %q is a URL; this VNFM deploys only manifests inside the VNF package (hash-checked at onboarding): add the file to the package under Files/kubernetes/", ParamDefFiles, i, s)
		}
		if slices.Contains(p.Files, s) {
			return p, fmt.Errorf("additionalParams.%s[%d] %q is listed twice", ParamDefFiles, i, s)
		}
		p.Files = append(p.Files, s)
	}
	if raw, ok := ap[ParamNamespace]; ok && raw != nil {
		s, ok := raw.(string)
		if !ok {
			return p, fmt.Errorf("additionalParams.%s must be a string (a Kubernetes namespace name)", ParamNamespace)
		}
		if s != "" {
			if errs := validation.IsDNS1123Label(s); len(errs) > 0 {
				return p, fmt.Errorf("additionalParams.%s %q is not a valid namespace name: %s", ParamNamespace, s, strings.Join(errs, "; "))
			}
			p.Namespace = s
		}
	}
	if raw, ok := ap[ParamVduMapping]; ok && raw != nil {
		m, ok := raw.(map[string]any)
		if !ok {
			return p, fmt.Errorf("additionalParams.%s must be an object {\"<VDU id>\": {\"kind\": \"Deployment\", \"name\": \"<workload name>\"}}", ParamVduMapping)
		}
		p.VduMapping = map[string]workloadRef{}
		for vdu, e := range m {
			em, _ := e.(map[string]any)
			k, _ := em["kind"].(string)
			n, _ := em["name"].(string)
			if k == "" || n == "" {
				return p, fmt.Errorf("additionalParams.%s.%s must be {\"kind\": <workload kind>, \"name\": <workload name>}", ParamVduMapping, vdu)
			}
			p.VduMapping[vdu] = workloadRef{Kind: k, Name: n}
		}
	}
	return p, nil
}

// helmParams are Tacker's Helm mode parameters (use_helm and the two that
// go with it), which this driver does not implement.
var helmParams = []string{"use_helm", "using_helm_install_param", "helm_replica_values"}

// refuseHelm refuses an instantiation in Tacker's Helm mode rather than
// deploy its def-files and ignore the charts (at request time only: an
// instance's stored parameters do not stop its scale, heal or termination).
func refuseHelm(ap map[string]any) error {
	for _, k := range helmParams {
		if helmOff(k, ap[k]) {
			continue
		}
		return fmt.Errorf("additionalParams.%s: Tacker's Helm mode is not supported by this VNFM; deploy the chart's "+
			"manifests instead: render them (helm template <release> <chart> --namespace <ns> > Files/kubernetes/<release>.yaml), "+
			"add the file to the VNF package and list it in additionalParams.%s, without %s", k, ParamDefFiles, strings.Join(helmParams, ", "))
	}
	return nil
}

// helmOff says a Helm parameter asks for nothing: absent, null or false, or
// use_helm given as "" or "false" in any case.
func helmOff(k string, v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case bool:
		return !x
	case string:
		return k == "use_helm" && (x == "" || strings.EqualFold(x, "false"))
	}
	return false
}

// object is one manifest document as the driver creates it.
type object struct {
	File string // package path
	Doc  int    // 1-based document number in File
	Kind *kind
	Obj  *unstructured.Unstructured
	// VDU is the VDU a workload backs ("" for other kinds).
	VDU string
}

// Name is "<Kind>/<name>": how progress and errors name the object.
func (o *object) Name() string {
	if o.Kind.review {
		return fmt.Sprintf("%s/%s#%d", o.Kind.gvk.Kind, o.File, o.Doc)
	}
	return o.Kind.gvk.Kind + "/" + o.Obj.GetName()
}

func (o *object) where() string {
	return fmt.Sprintf("%s (document %d of %s)", o.Name(), o.Doc, o.File)
}

// plan is what an instantiation deploys: the objects in creation order.
type plan struct {
	Namespace string
	Objects   []*object
}

// workloads returns the objects that back VDUs, by VDU id.
func (p *plan) workloads() map[string][]*object {
	out := map[string][]*object{}
	for _, o := range p.Objects {
		if o.VDU != "" {
			out[o.VDU] = append(out[o.VDU], o)
		}
	}
	return out
}

// find returns the planned object of kind and name.
func (p *plan) find(kind, name string) *object {
	for _, o := range p.Objects {
		if o.Kind.gvk.Kind == kind && o.Obj.GetName() == name {
			return o
		}
	}
	return nil
}

// planRequest is what a plan is made from.
type planRequest struct {
	Package    driverapi.Package
	Flavour    *model.Flavour
	InstanceID string
	Params     map[string]any
	// Levels are the aspects' scale levels the replicas follow.
	Levels map[string]int
	Limits Limits
}

// makePlan reads and checks the manifests of an instantiation. Every error
// is for the person who wrote the request or the package: it names the
// file, the document and the object.
func makePlan(ctx context.Context, r planRequest) (*plan, error) {
	p, err := readParams(r.Params)
	if err != nil {
		return nil, err
	}
	lim := r.Limits.withDefaults()
	var objs []*object
	var total int64
	for _, f := range p.Files {
		data, err := r.Package.ReadFile(ctx, f)
		if err != nil {
			return nil, fmt.Errorf("additionalParams.%s: %q cannot be read from the VNF package (%v); list the package's manifest paths, e.g. Files/kubernetes/deployment.yaml", ParamDefFiles, f, err)
		}
		if int64(len(data)) > lim.MaxFileBytes {
			return nil, fmt.Errorf("manifest %s is %d bytes, more than the %d allowed for one manifest file", f, len(data), lim.MaxFileBytes)
		}
		if total += int64(len(data)); total > lim.MaxTotalBytes {
			return nil, fmt.Errorf("the manifests of additionalParams.%s are more than %d bytes together", ParamDefFiles, lim.MaxTotalBytes)
		}
		docs, err := parseManifest(f, data, lim.MaxDocuments, len(objs))
		if err != nil {
			return nil, err
		}
		objs = append(objs, docs...)
	}
	if len(objs) == 0 {
		return nil, fmt.Errorf("the manifests of additionalParams.%s hold no Kubernetes object", ParamDefFiles)
	}
	ns, err := chooseNamespace(p, objs)
	if err != nil {
		return nil, err
	}
	seen := map[string]*object{}
	for _, o := range objs {
		if o.Kind.namespaced {
			o.Obj.SetNamespace(ns)
		}
		key := o.Kind.gvk.Kind + "/" + o.Obj.GetNamespace() + "/" + o.Obj.GetName()
		if prev, dup := seen[key]; dup && !o.Kind.review {
			return nil, fmt.Errorf("%s is defined twice: in %s and in %s", o.Name(), prev.where(), o.where())
		}
		seen[key] = o
	}
	if err := mapVDUs(r.Flavour, p, objs); err != nil {
		return nil, err
	}
	if err := setReplicas(r.Flavour, r.Levels, objs); err != nil {
		return nil, err
	}
	for _, o := range objs {
		if o.Kind.review {
			continue
		}
		labels := o.Obj.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[LabelManagedBy] = ManagedBy
		o.Obj.SetLabels(labels)
		ann := o.Obj.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[AnnotationInstance] = r.InstanceID
		ann[AnnotationManifest] = o.File
		o.Obj.SetAnnotations(ann)
	}
	sort.SliceStable(objs, func(i, j int) bool { return objs[i].Kind.rank < objs[j].Kind.rank })
	return &plan{Namespace: ns, Objects: objs}, nil
}

// parseManifest splits a manifest file into its documents and checks each.
// Empty documents (a trailing ---) are skipped; anchors and aliases are
// refused (no Kubernetes manifest needs them, and they are how a small file
// expands into a huge one).
func parseManifest(file string, data []byte, maxDocs, before int) (out []*object, err error) {
	defer func() {
		if v := recover(); v != nil {
			out, err = nil, fmt.Errorf("manifest %s cannot be parsed as YAML (%v)", file, v)
		}
	}()
	if !utf8.Valid(data) {
		return nil, fmt.Errorf("manifest %s is not UTF-8 text", file)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for n := 1; ; n++ {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("manifest %s, document %d: invalid YAML: %s", file, n, strings.TrimPrefix(err.Error(), "yaml: "))
		}
		if err := checkNode(&doc, 0, new(int)); err != nil {
			return nil, fmt.Errorf("manifest %s, document %d: %w", file, n, err)
		}
		root := &doc
		if root.Kind == yaml.DocumentNode {
			if len(root.Content) == 0 {
				continue
			}
			root = root.Content[0]
		}
		if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
			continue // empty document
		}
		if root.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("manifest %s, document %d (line %d): a Kubernetes object must be a mapping with apiVersion, kind and metadata", file, n, root.Line)
		}
		if before+len(out) >= maxDocs {
			return nil, fmt.Errorf("manifest %s: the request's manifests hold more documents than the %d allowed", file, maxDocs)
		}
		var v map[string]any
		if err := root.Decode(&v); err != nil {
			return nil, fmt.Errorf("manifest %s, document %d: %s", file, n, strings.TrimPrefix(err.Error(), "yaml: "))
		}
		o, err := toObject(file, n, v)
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
}

// checkNode refuses anchors, aliases, duplicate keys, deep nesting and
// oversized documents.
func checkNode(n *yaml.Node, depth int, count *int) error {
	if n.Kind == yaml.AliasNode || n.Anchor != "" {
		return fmt.Errorf("line %d: YAML anchors and aliases are not accepted in Kubernetes manifests; write the values out", n.Line)
	}
	if depth > maxManifestDepth {
		return fmt.Errorf("line %d: the YAML nests deeper than %d levels", n.Line, maxManifestDepth)
	}
	if *count++; *count > maxManifestNodes {
		return fmt.Errorf("line %d: the document has more than %d YAML nodes", n.Line, maxManifestNodes)
	}
	if n.Kind == yaml.MappingNode {
		seen := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind == yaml.ScalarNode {
				if line, dup := seen[k.Value]; dup {
					return fmt.Errorf("line %d: key %q is defined twice in this mapping (first at line %d)", k.Line, k.Value, line)
				}
				seen[k.Value] = k.Line
			}
		}
	}
	for _, c := range n.Content {
		if err := checkNode(c, depth+1, count); err != nil {
			return err
		}
	}
	return nil
}

func toObject(file string, doc int, v map[string]any) (*object, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("manifest %s, document %d: cannot be represented as JSON (%v); mapping keys must be strings", file, doc, err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(b); err != nil {
		return nil, fmt.Errorf("manifest %s, document %d: not a Kubernetes object: %v", file, doc, err)
	}
	at := fmt.Sprintf("manifest %s, document %d", file, doc)
	gv, err := schema.ParseGroupVersion(u.GetAPIVersion())
	if err != nil || u.GetAPIVersion() == "" {
		return nil, fmt.Errorf("%s: apiVersion %q is not a Kubernetes API version (such as v1 or apps/v1)", at, u.GetAPIVersion())
	}
	gvk := gv.WithKind(u.GetKind())
	k := kindOf(gvk)
	if k == nil {
		if why, ok := refusedKinds[gvk.Kind]; ok {
			return nil, fmt.Errorf("%s: kind %s is not deployed as part of a VNF: %s", at, gvk.Kind, why)
		}
		if alts := kindByName[gvk.Kind]; len(alts) > 0 {
			return nil, fmt.Errorf("%s: %s in apiVersion %s is not supported; write apiVersion: %s", at, gvk.Kind, u.GetAPIVersion(), alts[0].gvk.GroupVersion())
		}
		return nil, fmt.Errorf("%s: kind %q (apiVersion %s) is not a kind this driver deploys; supported kinds: %s", at, gvk.Kind, u.GetAPIVersion(), supportedKinds())
	}
	name := u.GetName()
	if k.review {
		// A question to the API server: no name, never stored.
		return &object{File: file, Doc: doc, Kind: k, Obj: u}, nil
	}
	if name == "" {
		if u.GetGenerateName() != "" {
			return nil, fmt.Errorf("%s: %s has metadata.generateName but no metadata.name; give it a fixed name (the VNFM finds, adopts and deletes objects by name)", at, gvk.Kind)
		}
		return nil, fmt.Errorf("%s: %s has no metadata.name", at, gvk.Kind)
	}
	var bad []string
	switch {
	case gvk.Group == "rbac.authorization.k8s.io":
		bad = path.IsValidPathSegmentName(name)
	default:
		bad = validation.IsDNS1123Subdomain(name)
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("%s: %s name %q is not valid: %s", at, gvk.Kind, name, strings.Join(bad, "; "))
	}
	if !k.namespaced && u.GetNamespace() != "" {
		return nil, fmt.Errorf("%s: %s %s is cluster-scoped, but its manifest sets metadata.namespace %q; remove metadata.namespace (cluster-scoped objects belong to no namespace)", at, gvk.Kind, name, u.GetNamespace())
	}
	if owners := u.GetOwnerReferences(); len(owners) > 0 {
		return nil, fmt.Errorf("%s: %s %s sets metadata.ownerReferences; the VNFM owns the objects it creates, remove them", at, gvk.Kind, name)
	}
	if len(u.GetFinalizers()) > 0 {
		return nil, fmt.Errorf("%s: %s %s sets metadata.finalizers, which would keep it from being deleted at termination; remove them", at, gvk.Kind, name)
	}
	// Fields the API server owns are dropped, as kubectl create does.
	unstructured.RemoveNestedField(u.Object, "status")
	for _, f := range []string{"uid", "resourceVersion", "creationTimestamp", "deletionTimestamp", "selfLink", "generation", "managedFields"} {
		unstructured.RemoveNestedField(u.Object, "metadata", f)
	}
	return &object{File: file, Doc: doc, Kind: k, Obj: u}, nil
}

func supportedKinds() string {
	var names []string
	for _, k := range kinds {
		names = append(names, k.gvk.Kind)
	}
	return strings.Join(names, ", ")
}

// chooseNamespace picks the namespace of the namespaced objects as Tacker
// does — the request's, else the one the manifests name, else "default" —
// but a manifest without metadata.namespace has no opinion (Tacker counts it
// as "" and refuses the mix).
func chooseNamespace(p params, objs []*object) (string, error) {
	if p.Namespace != "" {
		return p.Namespace, nil
	}
	var ns string
	var first *object
	for _, o := range objs {
		if !o.Kind.namespaced || o.Obj.GetNamespace() == "" {
			continue
		}
		if ns == "" {
			ns, first = o.Obj.GetNamespace(), o
			continue
		}
		if o.Obj.GetNamespace() != ns {
			return "", fmt.Errorf("the manifests name more than one namespace (%s in %s, %s in %s); one VNF lives in one namespace: give additionalParams.%s or make them agree",
				ns, first.where(), o.Obj.GetNamespace(), o.where(), ParamNamespace)
		}
	}
	if ns == "" {
		ns = defaultNamespace
	}
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		return "", fmt.Errorf("%s: namespace %q is not valid: %s", first.where(), ns, strings.Join(errs, "; "))
	}
	return ns, nil
}

// mapVDUs binds every workload to its VDU: by additionalParams.vdu_mapping,
// else by the VDU's properties.name equal to the workload's name (Tacker).
// A workload no VDU claims is refused: its pods could not be VNFCs.
func mapVDUs(fl *model.Flavour, p params, objs []*object) error {
	if fl == nil {
		return errors.New("the instance has no deployment flavour")
	}
	byName := map[string]string{}
	for _, id := range sortedVDUs(fl) {
		if n := fl.VDUs[id].Name; n != "" {
			if _, dup := byName[n]; !dup {
				byName[n] = id
			}
		}
	}
	if p.VduMapping != nil {
		for vdu := range p.VduMapping {
			if fl.VDUs[vdu] == nil {
				return fmt.Errorf("additionalParams.%s names VDU %q, which flavour %s does not have (its VDUs: %s)", ParamVduMapping, vdu, fl.ID, strings.Join(sortedVDUs(fl), ", "))
			}
		}
		for _, id := range sortedVDUs(fl) {
			if _, ok := p.VduMapping[id]; !ok {
				return fmt.Errorf("additionalParams.%s has no entry for VDU %s; with a vdu_mapping every VDU of flavour %s must be mapped", ParamVduMapping, id, fl.ID)
			}
		}
	}
	claimed := map[string]*object{}
	for _, o := range objs {
		if !o.Kind.workload {
			continue
		}
		vdu := ""
		if p.VduMapping != nil {
			for id, ref := range p.VduMapping {
				if ref.Kind == o.Kind.gvk.Kind && ref.Name == o.Obj.GetName() {
					vdu = id
				}
			}
			if vdu == "" {
				return fmt.Errorf("%s is a workload that additionalParams.%s does not map to a VDU; add {\"<VDU id>\": {\"kind\": %q, \"name\": %q}}", o.where(), ParamVduMapping, o.Kind.gvk.Kind, o.Obj.GetName())
			}
		} else {
			vdu = byName[o.Obj.GetName()]
			if vdu == "" {
				return fmt.Errorf("%s is a workload no VDU of flavour %s names: a VDU's properties.name must equal the workload's metadata.name (VDU names: %s), or give additionalParams.%s",
					o.where(), fl.ID, vduNames(fl), ParamVduMapping)
			}
		}
		if prev := claimed[vdu]; prev != nil {
			return fmt.Errorf("VDU %s is backed by two workloads, %s and %s; one VDU maps to one workload", vdu, prev.where(), o.where())
		}
		claimed[vdu] = o
		o.VDU = vdu
	}
	if p.VduMapping != nil {
		for id, ref := range p.VduMapping {
			if claimed[id] == nil {
				return fmt.Errorf("additionalParams.%s.%s names %s/%s, which is not a workload (Pod, Deployment, StatefulSet, ReplicaSet, DaemonSet) in the manifests", ParamVduMapping, id, ref.Kind, ref.Name)
			}
		}
	}
	return nil
}

func sortedVDUs(fl *model.Flavour) []string {
	ids := make([]string, 0, len(fl.VDUs))
	for id := range fl.VDUs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func vduNames(fl *model.Flavour) string {
	var out []string
	for _, id := range sortedVDUs(fl) {
		out = append(out, fmt.Sprintf("%s=%q", id, fl.VDUs[id].Name))
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

// aspectVDUs are the VDUs some scaling aspect scales.
func aspectVDUs(fl *model.Flavour) map[string][]string {
	out := map[string][]string{}
	for id, a := range fl.ScalingAspects {
		for vdu := range a.VduDeltas {
			out[vdu] = append(out[vdu], id)
		}
	}
	return out
}

// setReplicas gives the scalable workloads of scaled VDUs the replica count
// of their scale levels (Tacker: initial delta + deltas of the levels; the
// manifest's replicas are overridden), and checks it fits the VDU's
// vdu_profile.
func setReplicas(fl *model.Flavour, levels map[string]int, objs []*object) error {
	scaled := aspectVDUs(fl)
	for _, o := range objs {
		if o.VDU == "" {
			continue
		}
		vdu := fl.VDUs[o.VDU]
		if len(scaled[o.VDU]) > 0 {
			if !o.Kind.scalable {
				return fmt.Errorf("%s backs VDU %s, which aspect %s scales, but a %s cannot be scaled; use a Deployment, StatefulSet or ReplicaSet", o.where(), o.VDU, strings.Join(scaled[o.VDU], ", "), o.Kind.gvk.Kind)
			}
			n := fl.Instances(o.VDU, levels)
			if err := unstructured.SetNestedField(o.Obj.Object, int64(n), "spec", "replicas"); err != nil {
				return fmt.Errorf("%s: spec.replicas: %w", o.where(), err)
			}
		}
		n := replicasOf(o)
		if vdu.MaxInstances > 0 && n > vdu.MaxInstances || n < vdu.MinInstances && o.Kind.gvk.Kind != "DaemonSet" {
			return fmt.Errorf("%s would run %d pod(s), outside VDU %s's vdu_profile (%d to %d instances)", o.where(), n, o.VDU, vdu.MinInstances, vdu.MaxInstances)
		}
	}
	return nil
}

// replicasOf is the pod count a workload asks for (DaemonSet: unknown, 0).
func replicasOf(o *object) int {
	switch o.Kind.gvk.Kind {
	case "Pod":
		return 1
	case "DaemonSet":
		return 0
	}
	n, found, _ := unstructured.NestedInt64(o.Obj.Object, "spec", "replicas")
	if !found {
		return 1
	}
	return int(n)
}
