package openstack

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
	"github.com/mini-vnfm/mini-vnfm/internal/hotgen"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/userdata"
)

// Flavours without a Heat base template (BaseHOT/<flavourId>/): the driver
// generates the template from the VNFD (internal/hotgen), as Tacker does
// with its TOSCA translation, at instantiation from the flavour and the
// request. The generated template is the stack's: later operations need
// only its groups (hotgen.Layout, a function of the flavour), and an entire
// heal re-creates the stack from the template Heat holds, kept with the
// heal's checkpoint before the stack is deleted.

// nodeTemplate is the progress node holding the generated template: the op
// occurrence's progress shows it (for debugging a VNFD).
const nodeTemplate = "heat-template"

// generatedTemplate is what the progress node records.
type generatedTemplate struct {
	Generated bool              `json:"generated"`
	Digest    string            `json:"sha256"`
	Top       string            `json:"top"`
	Files     map[string]string `json:"files"`
}

// hotgenInput is hotgen's input for an instantiate request at the
// instantiation level's scale levels.
func hotgenInput(vnfd *model.Vnfd, fl *model.Flavour, req *model.InstantiateVnfRequest, levels map[string]int) hotgen.Input {
	in := hotgen.Input{Flavour: fl, Levels: levels, ExtVirtualLinks: req.ExtVirtualLinks,
		ExtManagedVirtualLinks: req.ExtManagedVirtualLinks, AdditionalParams: req.AdditionalParams}
	if vnfd != nil {
		in.VnfdID = vnfd.ID
	}
	return in
}

// requestLevels are the aspect scale levels of the request's instantiation
// level (the flavour's default when it names none).
func requestLevels(fl *model.Flavour, req *model.InstantiateVnfRequest) map[string]int {
	id := req.InstantiationLevelID
	if id == "" {
		id = fl.DefaultInstantiationLevel
	}
	out := map[string]int{}
	if l := fl.InstantiationLevels[id]; l != nil {
		maps.Copy(out, l.ScaleLevels)
	}
	return out
}

// generate makes the instantiation's template, records it in the
// operation's progress and analyses it.
func (d *Driver) generate(ctx context.Context, op *driverapi.Op, info *model.InstantiatedVnfInfo) ([]byte, map[string]string, *layout, error) {
	req := op.Request.Instantiate
	if req == nil {
		return nil, nil, nil, fmt.Errorf("flavour %s has no Heat base template (BaseHOT/%s/) and this %s operation cannot generate one", op.Flavour.ID, op.Flavour.ID, op.Operation)
	}
	tpl, err := hotgen.Generate(hotgenInput(op.Vnfd, op.Flavour, req, levelsOf(info)))
	if err != nil {
		return nil, nil, nil, err
	}
	lay, err := analyze([]byte(tpl.Top), tpl.Files, op.Flavour)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("the generated Heat template: %w", err)
	}
	p := progress{op}
	if _, ok := p.completed(nodeTemplate); !ok {
		h := sha256.New()
		h.Write([]byte(tpl.Top))
		for _, k := range slices.Sorted(maps.Keys(tpl.Files)) {
			h.Write([]byte(k + "\x00" + tpl.Files[k]))
		}
		rec := generatedTemplate{Generated: true, Digest: hex.EncodeToString(h.Sum(nil)), Top: tpl.Top, Files: tpl.Files}
		if err := p.start(ctx, nodeTemplate, fmt.Sprintf("Heat template generated from the VNFD (flavour %s has no BaseHOT): sha256 %s, %d server groups, %d nested templates; Heat holds it as stack %s's template",
			op.Flavour.ID, rec.Digest, len(tpl.Groups), len(tpl.Files), StackName(op.Instance.ID))); err != nil {
			return nil, nil, nil, err
		}
		if err := p.done(ctx, nodeTemplate, rec); err != nil {
			return nil, nil, nil, err
		}
		d.log(op).Info("Heat template generated from the VNFD", "flavour", op.Flavour.ID, "sha256", rec.Digest, "groups", len(tpl.Groups))
	}
	return []byte(tpl.Top), tpl.Files, lay, nil
}

// generatedLayout is the layout of a generated template, from the flavour
// alone.
func generatedLayout(fl *model.Flavour) *layout {
	l := &layout{params: map[string]hotParam{"nfv": {Type: "json"}}, groups: map[string]*group{}}
	for vdu, g := range hotgen.Layout(fl) {
		l.params[g.CapacityParam] = hotParam{Type: "number"}
		l.groups[g.Name] = &group{Name: g.Name, VDUs: []string{vdu}, CapacityParam: g.CapacityParam}
	}
	return l
}

// checkGenerated refuses, at the API, an instantiation whose template
// cannot be generated (hotgen.Error: each problem names its node).
func checkGenerated(a *driverapi.Accept) error {
	req := a.Request.Instantiate
	if req == nil {
		return nil
	}
	if err := hotgen.Check(hotgenInput(a.Vnfd, a.Flavour, req, requestLevels(a.Flavour, req))); err != nil {
		return err
	}
	return nil
}

// checkUserData refuses an instantiate request whose
// lcm-operation-user-data(-class) cannot be honoured (internal/userdata).
func checkUserData(ctx context.Context, a *driverapi.Accept) error {
	req := a.Request.Instantiate
	if req == nil {
		return nil
	}
	_, hasPath := req.AdditionalParams[userdata.KeyPath]
	_, hasClass := req.AdditionalParams[userdata.KeyClass]
	if !hasPath && !hasClass {
		return nil
	}
	files := map[string]bool{}
	if a.Package != nil {
		l, err := a.Package.Files(ctx)
		if err != nil {
			return fmt.Errorf("reading the VNF package's file list: %w", err)
		}
		for _, f := range l {
			files[strings.TrimPrefix(f, "./")] = true
		}
	}
	_, err := userdata.Select(req.AdditionalParams, func(p string) bool { return files[p] })
	return err
}

// stackTemplate reads the template and the files a stack runs (Heat's
// GET .../template and .../files).
func stackTemplate(ctx context.Context, c *clients, ref stackRef) (string, map[string]string, error) {
	var tmpl map[string]any
	if _, err := c.heat.Get(ctx, c.heat.ServiceURL("stacks", ref.Name, ref.ID, "template"), &tmpl, nil); err != nil {
		return "", nil, fmt.Errorf("Heat: reading the template of stack %s: %w", ref.Name, err)
	}
	files := map[string]string{}
	if _, err := c.heat.Get(ctx, c.heat.ServiceURL("stacks", ref.Name, ref.ID, "files"), &files, nil); err != nil {
		return "", nil, fmt.Errorf("Heat: reading the files of stack %s: %w", ref.Name, err)
	}
	b, err := json.Marshal(tmpl)
	if err != nil {
		return "", nil, err
	}
	return string(b), files, nil
}
