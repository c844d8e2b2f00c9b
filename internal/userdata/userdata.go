// Package userdata is Tacker's "LCM operation user data" without Python:
// an instantiate request's additionalParams lcm-operation-user-data (a
// Python file in the VNF package) and lcm-operation-user-data-class (a class
// in it) select, by the class name, a built-in Go equivalent of Tacker's
// well-known user-data classes. The package's Python is never imported or
// run; its file must exist in the package, as Tacker requires, and is
// otherwise not read.
//
// Every supported class computes the Heat stack parameters of the flavour's
// top template (the base HOT, or the one internal/hotgen generates) the way
// Tacker's lcm_user_data utilities do (tacker/vnfm/lcm_user_data/utils.py:
// create_initial_param_dict, create_vdu_flavor_dict, create_vdu_image_dict,
// create_network_dict, create_desired_capacity_dict, plus
// get_diff_base_hot_param_from_api):
//
//   - nfv.VDU.<vdu>.flavor / image (and Tacker v2's computeFlavourId /
//     vcImageId): the VDU's virtual_compute requested_additional_capability_name
//     and sw_image_data name, or additionalParams.nfv.VDU.<vdu>;
//   - nfv.CP.<cp>.network / fixed_ips / mac_address / port: the
//     extVirtualLinks resourceId whose extCps name the CP (cpConfig addresses,
//     subnets, MAC, linkPortId), or the extManagedVirtualLinks resourceId of
//     the CP's internal virtual link;
//   - desired capacities: <aspect>_desired_capacity (the group named after
//     the aspect), <vdu>_desired_capacity, nfv.VDU.<vdu>.desired_capacity and
//     whatever parameter a group's desired_capacity reads: the VDU's initial
//     delta plus the aspect deltas up to the scale level of the requested
//     instantiation level (scale and heal recompute them at the new levels);
//   - every additionalParams key equal to a top-level template parameter
//     (KubernetesClusterUserData's pass-through: node_password, ...).
//
// The OpenStack infra driver builds these parameters (internal/infra/openstack);
// this package names the classes, validates the request's choice and
// documents what each name means.
package userdata

import (
	"fmt"
	"path"
	"slices"
	"strings"
)

// additionalParams keys (Tacker's).
const (
	KeyPath  = "lcm-operation-user-data"
	KeyClass = "lcm-operation-user-data-class"
)

// Class is a supported user-data class name.
type Class struct {
	// Name is the class name a request gives.
	Name string `json:"name"`
	// Origin says where Tacker (or the seed) uses it.
	Origin string `json:"origin"`
}

// Classes lists the supported classes. All select the one built-in
// behaviour described in the package documentation: Tacker's classes of
// these names compute the same parameters from the same inputs.
var Classes = []Class{
	{Name: "BaseUserData", Origin: "seed 001's Kuryr-Kubernetes request (UserData/base_user_data.py)"},
	{Name: "KubernetesClusterUserData", Origin: "Tacker's kubeadm MgmtDriver sample (UserData/k8s_cluster_user_data.py)"},
	{Name: "SampleUserData", Origin: "Tacker's kubespray sample and functional tests (UserData/lcm_user_data.py)"},
	{Name: "StandardUserData", Origin: "Tacker v2's userdata_standard.StandardUserData"},
}

// Names lists the supported class names.
func Names() []string {
	out := make([]string, 0, len(Classes))
	for _, c := range Classes {
		out = append(out, c.Name)
	}
	return out
}

// Selection is a request's valid choice.
type Selection struct {
	// Path is the package path of the (never run) Python file.
	Path string `json:"path"`
	// Class is the class the request names.
	Class Class `json:"class"`
}

// Error is a refused choice: Problems each name the additionalParams key.
type Error struct{ Problems []string }

func (e *Error) Error() string {
	return "LCM operation user data: " + strings.Join(e.Problems, "; ")
}

// Select reads the request's additionalParams: nil when it asks for no user
// data (the built-in parameters apply anyway), the selection, or an *Error
// saying what is wrong (one key without the other, not a string, a path
// outside or missing from the package, an unknown class with the list of
// supported ones). has reports whether the package holds a path.
func Select(additional map[string]any, has func(path string) bool) (*Selection, error) {
	rawPath, hasPath := additional[KeyPath]
	rawClass, hasClass := additional[KeyClass]
	if !hasPath && !hasClass {
		return nil, nil
	}
	var problems []string
	addf := func(key, format string, args ...any) {
		problems = append(problems, fmt.Sprintf("additionalParams.%s: ", key)+fmt.Sprintf(format, args...))
	}
	switch {
	case !hasPath:
		addf(KeyPath, "is required with %s: give the package path of the user-data file (e.g. UserData/base_user_data.py), as Tacker requires both", KeyClass)
	case !hasClass:
		addf(KeyClass, "is required with %s: give one of %s", KeyPath, strings.Join(Names(), ", "))
	}
	sel := &Selection{}
	if hasPath {
		p, ok := rawPath.(string)
		switch {
		case !ok:
			addf(KeyPath, "must be a string (a path in the VNF package), not %T", rawPath)
		default:
			clean := path.Clean(strings.TrimPrefix(strings.TrimSpace(p), "./"))
			switch {
			case p == "" || path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") || strings.Contains(p, "\\"):
				addf(KeyPath, "%q must be a path inside the VNF package, such as UserData/base_user_data.py", p)
			case has != nil && !has(clean):
				addf(KeyPath, "%q is not in the VNF package (its Python is never run, but it must be there, as Tacker requires)", p)
			default:
				sel.Path = clean
			}
		}
	}
	if hasClass {
		c, ok := rawClass.(string)
		switch {
		case !ok:
			addf(KeyClass, "must be a string (a class name), not %T", rawClass)
		default:
			i := slices.IndexFunc(Classes, func(x Class) bool { return x.Name == c })
			if i < 0 {
				addf(KeyClass, "%q is not a supported user-data class; supported (built-in Go equivalents, the package's Python is never run): %s", c, strings.Join(Names(), ", "))
			} else {
				sel.Class = Classes[i]
			}
		}
	}
	if len(problems) > 0 {
		return nil, &Error{Problems: problems}
	}
	return sel, nil
}

// Note is the progress line saying what a selection does.
func (s *Selection) Note() string {
	return fmt.Sprintf("LCM user data: class %s from %s selects the built-in parameter builder (flavours, images, networks, CP addresses, desired capacities from the VNFD, the instantiation level and the request); the package's Python is not run", s.Class.Name, s.Path)
}
