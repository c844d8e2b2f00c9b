package openstack

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mini-vnfm/mini-vnfm/internal/model"
)

// testFlavour is the VNFD flavour the testdata/simple templates belong to:
// one masterNode, workerNode 2 + 1 per level of aspect worker_instance.
func testFlavour() *model.Flavour {
	order := 0
	return &model.Flavour{
		ID: "simple", DefaultInstantiationLevel: "instantiation_level_1",
		InstantiationLevels: map[string]*model.InstantiationLevel{
			"instantiation_level_1": {ScaleLevels: map[string]int{"worker_instance": 0}},
			"instantiation_level_2": {ScaleLevels: map[string]int{"worker_instance": 2}},
		},
		ScalingAspects: map[string]*model.ScalingAspect{"worker_instance": {Name: "worker_instance", MaxScaleLevel: 4,
			StepDeltas: []string{"delta_1"}, VduDeltas: map[string]map[string]int{"workerNode": {"delta_1": 1}}}},
		VDUs: map[string]*model.VDU{
			"masterNode": {ID: "masterNode", MinInstances: 1, MaxInstances: 1, InitialInstances: 1, Flavor: "m1.medium",
				SwImage: &model.SwImage{Name: "ubuntu-22.04"}, CPs: []model.VduCP{{ID: "masterNode_CP1", Order: &order}}},
			"workerNode": {ID: "workerNode", MinInstances: 1, MaxInstances: 6, InitialInstances: 2, Flavor: "m1.small",
				SwImage: &model.SwImage{Name: "ubuntu-22.04"}, CPs: []model.VduCP{{ID: "workerNode_CP1", Order: &order}}},
		},
		ExtCPs: map[string]*model.ExtCP{
			"masterNode_CP1": {ID: "masterNode_CP1", Kind: "VduCp", VDU: "masterNode"},
			"workerNode_CP1": {ID: "workerNode_CP1", Kind: "VduCp", VDU: "workerNode"},
		},
		VipCPs: map[string]*model.VipCP{"vip_CP": {ID: "vip_CP", Targets: []string{"masterNode_CP1"}}},
		HOT:    &model.HOT{Top: "BaseHOT/simple/top.yaml", Files: map[string]string{"masterNode.yaml": "BaseHOT/simple/nested/masterNode.yaml", "workerNode.yaml": "BaseHOT/simple/nested/workerNode.yaml"}},
	}
}

func testVnfd() *model.Vnfd {
	return &model.Vnfd{ID: "vnfd-1", Provider: "Test", ProductName: "k8s", SoftwareVersion: "1", Version: "1",
		Flavours: map[string]*model.Flavour{"simple": testFlavour()}}
}

// dirPackage serves BaseHOT/<path> from testdata/<path>.
type dirPackage struct{ dir string }

func (p dirPackage) ReadFile(_ context.Context, path string) ([]byte, error) {
	return os.ReadFile(filepath.Join(p.dir, strings.TrimPrefix(path, "BaseHOT/")))
}

func (p dirPackage) Files(context.Context) ([]string, error) {
	var out []string
	err := filepath.WalkDir(p.dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(p.dir, path)
			out = append(out, "BaseHOT/"+filepath.ToSlash(rel))
		}
		return err
	})
	return out, err
}

func readTemplate(t *testing.T) ([]byte, map[string]string) {
	t.Helper()
	top, files, err := heatTemplate(context.Background(), dirPackage{"testdata"}, testFlavour())
	if err != nil {
		t.Fatal(err)
	}
	return top, files
}

// journal is an in-memory operation journal: nodes completed in one run of
// a step are seen as completed by the next run (crash resume), like the
// engine's journal.
type journal struct {
	mu    sync.Mutex
	nodes map[string]json.RawMessage // phase/step/node → output
	notes []string
	// failDone makes NodeDone fail (a crash before the checkpoint).
	failDone bool
}

type stepProgress struct {
	j    *journal
	key  string
	seen map[string]json.RawMessage // as loaded at the run's start
}

func (j *journal) progress(step string) *stepProgress {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.nodes == nil {
		j.nodes = map[string]json.RawMessage{}
	}
	seen := map[string]json.RawMessage{}
	for k, v := range j.nodes {
		seen[k] = v
	}
	return &stepProgress{j: j, key: step + "/", seen: seen}
}

func (p *stepProgress) Note(_ context.Context, m string) error {
	p.j.mu.Lock()
	defer p.j.mu.Unlock()
	p.j.notes = append(p.j.notes, m)
	return nil
}
func (p *stepProgress) NodeStart(context.Context, string, string) error { return nil }
func (p *stepProgress) NodeNote(ctx context.Context, _ string, m string) error {
	return p.Note(ctx, m)
}
func (p *stepProgress) NodeFailed(context.Context, string, error) error { return nil }
func (p *stepProgress) NodeDone(_ context.Context, node string, out any) error {
	p.j.mu.Lock()
	defer p.j.mu.Unlock()
	if p.j.failDone {
		return errors.New("journal unavailable (simulated crash)")
	}
	b, _ := json.Marshal(out)
	p.j.nodes[p.key+node] = b
	return nil
}
func (p *stepProgress) NodeCompleted(node string) (json.RawMessage, bool) {
	v, ok := p.seen[p.key+node]
	if ok && string(v) == "null" {
		return nil, true
	}
	return v, ok
}
