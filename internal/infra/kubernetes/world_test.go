package kubernetes_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"

	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
	kdrv "github.com/mini-vnfm/mini-vnfm/internal/infra/kubernetes"
	"github.com/mini-vnfm/mini-vnfm/internal/kubeworld"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/oidc/oidctest"
)

// One real control plane (with two kwok nodes) serves every test of the
// package; each test works in objects and namespaces of its own names.
var shared struct {
	once sync.Once
	w    *kubeworld.World
	cs   *k8s.Clientset
	vim  model.VimConnectionInfo
	err  error
	// idp is the OpenID provider the API server trusts (OIDC VIMs).
	idp *oidctest.Provider
}

// slots bounds how many CNFs the parallel tests deploy at once: enough to
// overlap their waits, few enough that a loaded 2-core machine keeps kwok's
// node heartbeats on time (a node that misses them turns its pods unready).
var slots = make(chan struct{}, 3)

// parallel runs the test in parallel with the others, in one of the slots.
func parallel(t *testing.T) {
	t.Parallel()
	slots <- struct{}{}
	t.Cleanup(func() { <-slots })
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.w != nil {
		_ = shared.w.Stop()
	}
	if shared.idp != nil {
		shared.idp.Close()
	}
	os.Exit(code)
}

// world starts the shared control plane on first use and returns a
// cluster-admin clientset and the VIM connection the driver uses: a
// ServiceAccount token bound to cluster-admin, as a cluster's management
// driver registers it.
func world(t *testing.T) (*k8s.Clientset, model.VimConnectionInfo) {
	t.Helper()
	shared.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		idp, err := oidctest.Start("vnfm", oidcClientSecret)
		if err != nil {
			shared.err = err
			return
		}
		shared.idp = idp
		w, err := kubeworld.Start(ctx, kubeworld.Options{Nodes: 2, Logf: t.Logf,
			OIDC: &kubeworld.OIDC{IssuerURL: idp.URL, ClientID: idp.ClientID, CAPEM: idp.CAPEM}})
		if err != nil {
			shared.err = err
			return
		}
		shared.w = w
		cs, err := w.Clientset()
		if err != nil {
			shared.err = err
			return
		}
		shared.cs = cs
		acc, err := w.VimAccess(ctx, "vnfm")
		if err != nil {
			shared.err = err
			return
		}
		shared.vim = model.VimConnectionInfo{ID: "vim-k8s", VimID: uuid.NewString(), VimType: driverapi.VimTypeKubernetes,
			InterfaceInfo: map[string]any{"endpoint": acc.Server, "ssl_ca_cert": acc.CAPEM},
			AccessInfo:    map[string]any{"bearer_token": acc.Token}}
	})
	if shared.err != nil {
		t.Fatalf("kubeworld: %v", shared.err)
	}
	return shared.cs, shared.vim
}

// dirPackage is a VNF package read from a directory.
type dirPackage string

func (p dirPackage) ReadFile(_ context.Context, path string) ([]byte, error) {
	if strings.Contains(path, "..") {
		return nil, errors.New("bad path")
	}
	return os.ReadFile(filepath.Join(string(p), path))
}

func (p dirPackage) Files(context.Context) ([]string, error) {
	var out []string
	err := filepath.Walk(string(p), func(path string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			rel, _ := filepath.Rel(string(p), path)
			out = append(out, rel)
		}
		return err
	})
	return out, err
}

// mapPackage is a VNF package held in memory.
type mapPackage map[string]string

func (p mapPackage) ReadFile(_ context.Context, path string) ([]byte, error) {
	s, ok := p[path]
	if !ok {
		return nil, fmt.Errorf("%s: no such file in the package", path)
	}
	return []byte(s), nil
}

func (p mapPackage) Files(context.Context) ([]string, error) {
	var out []string
	for k := range p {
		out = append(out, k)
	}
	sort.Strings(out)
	return out, nil
}

// testPackage is Tacker's own CNF test package (helloworld3), unchanged.
const testPackage = dirPackage("../../../test/testdata/tacker/test_cnf")

// flavour is the flavour of Tacker's helloworld3 "simple": VDU1 (vdu1, one
// instance), VDU2 (vdu2, 1 to 3 instances, scaled by vdu2_aspect by one
// per step, up to level 2).
func flavour() *model.Flavour {
	return &model.Flavour{ID: "simple", DefaultInstantiationLevel: "instantiation_level_1",
		VDUs: map[string]*model.VDU{
			"VDU1": {ID: "VDU1", Name: "vdu1", MinInstances: 1, MaxInstances: 1, InitialInstances: 1},
			"VDU2": {ID: "VDU2", Name: "vdu2", MinInstances: 1, MaxInstances: 3, InitialInstances: 1},
		},
		ScalingAspects: map[string]*model.ScalingAspect{"vdu2_aspect": {Name: "vdu2_aspect", MaxScaleLevel: 2,
			StepDeltas: []string{"delta_1"}, VduDeltas: map[string]map[string]int{"VDU2": {"delta_1": 1}}}},
		InstantiationLevels: map[string]*model.InstantiationLevel{
			"instantiation_level_1": {ScaleLevels: map[string]int{"vdu2_aspect": 0}},
			"instantiation_level_2": {ScaleLevels: map[string]int{"vdu2_aspect": 2}},
		}}
}

// recorder is the operation journal's progress as a test sees it; crashAt
// cancels the operation's context at that checkpoint (1-based), as a
// killed process would stop there.
type recorder struct {
	mu      sync.Mutex
	events  []string
	done    map[string]json.RawMessage
	crashAt int
	cancel  context.CancelFunc
}

func (r *recorder) add(e string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
	if r.crashAt > 0 && len(r.events) == r.crashAt && r.cancel != nil {
		r.cancel()
	}
}

func (r *recorder) Note(_ context.Context, m string) error { r.add("note " + m); return nil }
func (r *recorder) NodeStart(_ context.Context, n, m string) error {
	r.add("start " + n + ": " + m)
	return nil
}
func (r *recorder) NodeNote(_ context.Context, n, m string) error {
	r.add("note " + n + ": " + m)
	return nil
}
func (r *recorder) NodeDone(_ context.Context, n string, out any) error {
	b, _ := json.Marshal(out)
	r.mu.Lock()
	if r.done == nil {
		r.done = map[string]json.RawMessage{}
	}
	r.done[n] = b
	r.mu.Unlock()
	r.add("done " + n)
	return nil
}
func (r *recorder) NodeFailed(_ context.Context, n string, err error) error {
	r.add("failed " + n + ": " + err.Error())
	return nil
}
func (r *recorder) NodeCompleted(n string) (json.RawMessage, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	b, ok := r.done[n]
	return b, ok
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events)
}

// cnf is one CNF instance driven by the driver as the engine would.
type cnf struct {
	t    *testing.T
	d    *kdrv.Driver
	in   *model.VnfInstance
	fl   *model.Flavour
	pkg  driverapi.Package
	vim  model.VimConnectionInfo
	prog *recorder
	last *driverapi.Op
}

func newCNF(t *testing.T, d *kdrv.Driver, pkg driverapi.Package, params map[string]any) *cnf {
	_, vim := world(t)
	fl := flavour()
	in := &model.VnfInstance{ID: uuid.NewString(), InstantiationState: model.NotInstantiated, VimConnectionInfo: []model.VimConnectionInfo{vim}}
	in.InstantiatedVnfInfo = &model.InstantiatedVnfInfo{FlavourID: fl.ID, VnfState: "STARTED",
		ScaleStatus: []model.ScaleInfo{{AspectID: "vdu2_aspect", ScaleLevel: 0}}, AdditionalParams: params}
	return &cnf{t: t, d: d, in: in, fl: fl, pkg: pkg, vim: vim, prog: &recorder{}}
}

func (c *cnf) op(name string, req driverapi.Request) *driverapi.Op {
	op := &driverapi.Op{ID: uuid.NewString(), Operation: name, Instance: c.in, Vnfd: &model.Vnfd{ID: "vnfd", Flavours: map[string]*model.Flavour{c.fl.ID: c.fl}},
		Flavour: c.fl, Request: req, Package: c.pkg, Vim: &c.vim, Progress: c.prog, Previous: map[string]json.RawMessage{},
		ResourceChanges: &model.ResourceChanges{}, Scratch: map[string]json.RawMessage{}}
	c.last = op
	return op
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func (c *cnf) accept(req driverapi.Request) error {
	a := &driverapi.Accept{Request: req, Instance: c.in, Vnfd: &model.Vnfd{Flavours: map[string]*model.Flavour{c.fl.ID: c.fl}}, Flavour: c.fl, Package: c.pkg}
	switch {
	case req.Instantiate != nil:
		a.Operation = model.OpInstantiate
		saved := c.in.InstantiatedVnfInfo
		c.in.InstantiatedVnfInfo = nil
		defer func() { c.in.InstantiatedVnfInfo = saved }()
	case req.Scale != nil:
		a.Operation = model.OpScale
	}
	return c.d.CheckRequest(context.Background(), a)
}

func (c *cnf) instantiate() error {
	c.t.Helper()
	req := driverapi.Request{Instantiate: &model.InstantiateVnfRequest{FlavourID: c.fl.ID, AdditionalParams: c.in.InstantiatedVnfInfo.AdditionalParams}}
	if err := c.accept(req); err != nil {
		return fmt.Errorf("refused at accept time: %w", err)
	}
	return c.d.Instantiate(ctxFor(c.t, 5*time.Minute), c.op(model.OpInstantiate, req))
}

func (c *cnf) terminate(kind string) error {
	return c.d.Terminate(ctxFor(c.t, 5*time.Minute), c.op(model.OpTerminate, driverapi.Request{Terminate: &model.TerminateVnfRequest{TerminationType: kind}}))
}

func (c *cnf) mustInstantiate() {
	c.t.Helper()
	if err := c.instantiate(); err != nil {
		c.t.Fatalf("instantiate: %v\nprogress: %s", err, strings.Join(c.prog.events, "\n"))
	}
}

func (c *cnf) mustTerminate() {
	c.t.Helper()
	if err := c.terminate("FORCEFUL"); err != nil {
		c.t.Fatalf("terminate: %v", err)
	}
}

func (c *cnf) vnfcs(vdu string) []model.VnfcResourceInfo {
	var out []model.VnfcResourceInfo
	for _, v := range c.in.InstantiatedVnfInfo.VnfcResourceInfo {
		if vdu == "" || v.VduID == vdu {
			out = append(out, v)
		}
	}
	return out
}

func params(ns string, files ...string) map[string]any {
	var fs []any
	for _, f := range files {
		fs = append(fs, "Files/kubernetes/"+f)
	}
	p := map[string]any{kdrv.ParamDefFiles: fs}
	if ns != "" {
		p[kdrv.ParamNamespace] = ns
	}
	return p
}

// namespace creates a namespace for a test.
func namespace(t *testing.T, cs k8s.Interface, name string) {
	t.Helper()
	if _, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
