package vnfpkg

import (
	"path"
	"slices"
	"strings"

	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"go.yaml.in/yaml/v3"
)

// BuiltinScheme prefixes a built-in management driver reference:
// `file: builtin:kubeadm` in an artifact, or `implementation: builtin:kubeadm`.
const BuiltinScheme = "builtin:"

// tackerDriverKeys maps Tacker's management-driver artifact keys (its
// stevedore driver names) to the built-in drivers.
var tackerDriverKeys = map[string]string{
	"mgmt-drivers-kubernetes": "kubeadm",
	"mgmt-drivers-kubespray":  "kubespray",
}

// tackerDriverFiles maps Tacker's management-driver script names to the
// built-in drivers.
var tackerDriverFiles = map[string]string{
	"kubernetes_mgmt.py": "kubeadm",
	"kubespray_mgmt.py":  "kubespray",
}

// tackerNoop are Tacker's no-op driver names: a hook bound to one has no driver.
var tackerNoop = []string{"vnflcm_noop", "mgmt-drivers-noop", "vnflcm_noop.py"}

// vnflcmOperations are the Vnflcm operations other than hooks: the VNFM runs
// them itself, an implementation given for one is ignored (as Tacker does).
var vnflcmOperations = []string{
	"instantiate", "terminate", "modify_information", "change_flavour", "change_flavour_start", "change_flavour_end",
	"change_external_connectivity", "operate", "operate_start", "operate_end", "heal", "scale", "scale_to_level",
	"scale_to_level_start", "scale_to_level_end", "change_current_package", "change_current_package_start",
	"change_current_package_end", "create_snapshot", "create_snapshot_start", "create_snapshot_end",
	"revert_to_snapshot", "revert_to_snapshot_start", "revert_to_snapshot_end", "select_vnfs_package",
}

// bindHooks reads interfaces.Vnflcm of the flavour's VNF node (over the top
// VNFD's) and binds each hook to a management driver.
func (fc *flavourCtx) bindHooks(topVNF *nodeTpl) error {
	hooks := map[string]val{}
	arts := map[string]val{}
	for _, n := range []*nodeTpl{topVNF, fc.vnf} {
		if n == nil {
			continue
		}
		iv := n.v.get("interfaces")
		ies, err := iv.entries()
		if err != nil {
			return err
		}
		for _, ie := range ies {
			if ie.key != "Vnflcm" {
				fc.r.p.warnf("%s:%d: interface %s of %s is ignored; management drivers bind through interfaces.Vnflcm", n.v.file, ie.k.Line, ie.key, n.name)
				continue
			}
			ops := iv.sub(ie)
			if o := ops.get("operations"); o.isMap() { // TOSCA 1.3 interface assignment
				ops = o
			}
			oes, err := ops.entries()
			if err != nil {
				return err
			}
			for _, oe := range oes {
				switch oe.key {
				case "type", "inputs", "notifications", "description":
					continue
				}
				hooks[oe.key] = ops.sub(oe)
			}
		}
		av := n.v.get("artifacts")
		aes, err := av.entries()
		if err != nil {
			return err
		}
		for _, ae := range aes {
			arts[ae.key] = av.sub(ae)
		}
	}
	for _, hook := range sortedKeys(hooks) {
		def := hooks[hook]
		impl, inline, err := implementation(def)
		if err != nil {
			return err
		}
		if impl.n == nil && inline.n == nil {
			continue
		}
		if !slices.Contains(model.Hooks, hook) {
			if slices.Contains(vnflcmOperations, hook) {
				fc.r.p.warnf("%s:%d: the implementation of Vnflcm.%s is ignored: the VNFM performs that operation itself; management drivers run in the hooks %s", def.file, def.pos().Line, hook, strings.Join(model.Hooks, ", "))
				continue
			}
			return def.errf("unknown Vnflcm operation %q; the hooks a management driver can implement are %s", hook, strings.Join(model.Hooks, ", "))
		}
		driver, err := fc.resolveDriver(hook, impl, inline, arts)
		if err != nil {
			return err
		}
		if driver != "" {
			fc.fl.Interfaces[hook] = driver
		}
	}
	return nil
}

// implementation reads an operation definition: "artifact", [] (none),
// {implementation: artifact}, {implementation: {primary: artifact}} or an
// inline artifact {implementation: {primary: {file: ..., type: ...}}}.
// It returns the artifact-name value or the inline artifact.
func implementation(def val) (name, inline val, err error) {
	switch {
	case !def.exists():
		return val{}, val{}, nil
	case def.n.Kind == yaml.SequenceNode:
		if len(def.n.Content) == 0 {
			return val{}, val{}, nil
		}
		return val{}, val{}, def.errf("%s must be a mapping such as `{implementation: <artifact>}`, got a list", def.path)
	case def.n.Kind == yaml.ScalarNode:
		return def, val{}, nil
	}
	impl := def.get("implementation")
	if !impl.exists() {
		return val{}, val{}, nil
	}
	if impl.isMap() {
		impl = impl.get("primary")
		if !impl.exists() {
			return val{}, val{}, def.get("implementation").errf("%s.implementation has no primary artifact", def.path)
		}
		if impl.isMap() {
			return val{}, impl, nil
		}
	}
	if _, err := impl.str(); err != nil {
		return val{}, val{}, err
	}
	return impl, val{}, nil
}

// resolveDriver maps a hook's implementation to a management driver name
// ("" for Tacker's no-op driver).
func (fc *flavourCtx) resolveDriver(hook string, impl, inline val, arts map[string]val) (string, error) {
	known := fc.r.p.opts.KnownDrivers
	at := impl
	var key, file, typ string
	var art val
	if impl.n != nil {
		key = impl.n.Value
		if d, ok := strings.CutPrefix(key, BuiltinScheme); ok {
			return fc.checkDriver(hook, impl, d)
		}
		if a, ok := arts[key]; ok {
			art = a
		} else {
			switch {
			case tackerDriverKeys[key] != "":
				return fc.checkDriver(hook, impl, tackerDriverKeys[key])
			case slices.Contains(tackerNoop, key):
				return "", nil
			case slices.Contains(known, key):
				return key, nil
			}
			// TOSCA allows the implementation to be a file path.
			file, key = key, ""
		}
	} else {
		art = inline
	}
	if art.n != nil {
		at = art
		if !art.isMap() {
			return "", art.errf("artifact %s must be a mapping (type, file), got %s", key, art.kind())
		}
		var err error
		if file, err = art.get("file").optStr(); err != nil {
			return "", err
		}
		if typ, err = art.get("type").optStr(); err != nil {
			return "", err
		}
	}
	if d, ok := strings.CutPrefix(file, BuiltinScheme); ok {
		return fc.checkDriver(hook, art.get("file"), d)
	}
	if typ != "" && fc.r.arts.derivesFrom(typ, artifactBuiltin) {
		return "", art.get("file").errf("artifact %s has type %s, so its file must be %s<driver> (known drivers: %s)", key, typ, BuiltinScheme, strings.Join(known, ", "))
	}
	base := path.Base(strings.TrimRight(strings.TrimSpace(file), "]"))
	switch {
	case tackerDriverKeys[key] != "":
		return fc.checkDriver(hook, at, tackerDriverKeys[key])
	case tackerDriverFiles[base] != "":
		return fc.checkDriver(hook, at, tackerDriverFiles[base])
	case slices.Contains(tackerNoop, key) || slices.Contains(tackerNoop, base):
		return "", nil
	case key != "" && slices.Contains(known, key):
		return key, nil
	}
	what := "implementation " + quoteList([]string{impl.valueOr(key)})
	if key != "" {
		what = "artifact " + quoteList([]string{key})
		if file != "" {
			what += " (file " + file + ")"
		}
	}
	return "", at.errf("Vnflcm.%s: %s is not a management driver this VNFM has; known drivers: %s. Name one with an artifact `file: %s<driver>` (type %s), or use Tacker's artifact keys mgmt-drivers-kubernetes / mgmt-drivers-kubespray",
		hook, what, strings.Join(known, ", "), BuiltinScheme, artifactBuiltin)
}

func (v val) valueOr(def string) string {
	if v.n != nil && v.n.Kind == yaml.ScalarNode {
		return v.n.Value
	}
	return def
}

func (fc *flavourCtx) checkDriver(hook string, at val, driver string) (string, error) {
	known := fc.r.p.opts.KnownDrivers
	if !slices.Contains(known, driver) {
		return "", at.errf("Vnflcm.%s names management driver %q, which this VNFM does not have; known drivers: %s", hook, driver, strings.Join(known, ", "))
	}
	return driver, nil
}
