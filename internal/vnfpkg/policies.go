package vnfpkg

import (
	"maps"

	"github.com/mini-vnfm/mini-vnfm/internal/model"
)

// policy is one entry of topology_template.policies.
type policy struct {
	name, typ string
	kind      string // the SOL001 policy type it derives from
	v         val
}

// untranslatedPolicyTypes constrain placement or security in ways a
// generated Heat template does not express.
// (Bitrate policies are not among them: like vl_profile's bitrate
// requirements they are best effort, which Tacker ignores too.)
var untranslatedPolicyTypes = []string{"tosca.policies.Placement", "tosca.policies.nfv.SecurityGroupRule"}

var policyKinds = []string{policyScalingAspects, policyAspectDeltas, policyInitialDelta, policyInstLevels, policyVduInstLevels}

// policyList reads policies: a list of single-key maps.
func (fc *flavourCtx) policyList() ([]policy, error) {
	pv := fc.fd.tt.get("policies")
	if pv.isMap() {
		return nil, pv.errf("policies must be a list of single-key maps (`- scaling_aspects: {type: tosca.policies.nfv.ScalingAspects, ...}`), not a mapping: put a `- ` before each policy name")
	}
	items, err := pv.list()
	if err != nil {
		return nil, err
	}
	var out []policy
	seen := map[string]bool{}
	for _, it := range items {
		if !it.isMap() || len(pairs(it.n)) != 1 {
			return nil, it.errf("each policy must be a single-key map `- <policy name>: {type: ..., properties: ..., targets: [...]}`, got %s", it.kind())
		}
		e := pairs(it.n)[0]
		v := it.sub(e)
		if !v.isMap() {
			return nil, v.errf("policy %s must be a mapping (type, properties, targets), got %s", e.key, v.kind())
		}
		if seen[e.key] {
			return nil, it.errf("policy %s is defined twice; policy names must be unique", e.key)
		}
		seen[e.key] = true
		typ, err := v.get("type").str()
		if err != nil {
			return nil, err
		}
		if !fc.r.policies.known(typ) {
			return nil, v.get("type").errf("policy %s has type %s, which is neither a SOL001 policy type nor defined in the package's policy_types%s", e.key, typ, fc.r.suggest(typ))
		}
		p := policy{name: e.key, typ: typ, v: v}
		for _, k := range policyKinds {
			if fc.r.policies.derivesFrom(typ, k) {
				p.kind = k
				break
			}
		}
		out = append(out, p)
	}
	return out, nil
}

// vduTargets reads a policy's targets, which must be VDUs of the flavour.
func (fc *flavourCtx) vduTargets(p policy) ([]string, error) {
	tv := p.v.get("targets")
	ts, err := tv.strList()
	if err != nil {
		return nil, err
	}
	if len(ts) == 0 {
		return nil, p.v.errf("policy %s has no targets; add `targets: [<VDU>]`", p.name)
	}
	for _, t := range ts {
		if _, ok := fc.fl.VDUs[t]; !ok {
			return nil, tv.errf("policy %s targets %q, which is not a VDU of flavour %s (VDUs: %s)", p.name, t, fc.fd.id, quoteList(sortedKeys(fc.fl.VDUs)))
		}
	}
	return ts, nil
}

func (fc *flavourCtx) readPolicies() error {
	ps, err := fc.policyList()
	if err != nil {
		return err
	}
	fl := fc.fl
	for _, p := range ps {
		for _, t := range untranslatedPolicyTypes {
			if fc.r.policies.derivesFrom(p.typ, t) {
				fc.untranslated(p.name, p.typ)
				break
			}
		}
	}
	aspectAt := map[string]val{}
	// Aspects first: the other policies refer to them.
	for _, p := range ps {
		if p.kind != policyScalingAspects {
			continue
		}
		av := p.v.get("properties").get("aspects")
		es, err := av.entries()
		if err != nil {
			return err
		}
		if fl.ScalingAspects == nil {
			fl.ScalingAspects = map[string]*model.ScalingAspect{}
		}
		for _, e := range es {
			a := av.sub(e)
			if _, dup := fl.ScalingAspects[e.key]; dup {
				return a.errf("scaling aspect %s is defined twice", e.key)
			}
			sa := &model.ScalingAspect{}
			if sa.Name, err = a.get("name").optStr(); err != nil {
				return err
			}
			if sa.Description, err = a.get("description").optStr(); err != nil {
				return err
			}
			if sa.MaxScaleLevel, err = a.get("max_scale_level").integer(); err != nil {
				return err
			}
			if sa.StepDeltas, err = a.get("step_deltas").strList(); err != nil {
				return err
			}
			fl.ScalingAspects[e.key] = sa
			aspectAt[e.key] = a
		}
	}
	initialSet := map[string]val{}
	for _, p := range ps {
		props := p.v.get("properties")
		switch p.kind {
		case policyInitialDelta:
			targets, err := fc.vduTargets(p)
			if err != nil {
				return err
			}
			n, err := props.get("initial_delta").get("number_of_instances").integer()
			if err != nil {
				return err
			}
			for _, t := range targets {
				if prev, dup := initialSet[t]; dup {
					return p.v.errf("VDU %s has two VduInitialDelta policies (the other at line %d)", t, prev.pos().Line)
				}
				initialSet[t] = p.v
				fl.VDUs[t].InitialInstances = n
			}
		case policyAspectDeltas:
			targets, err := fc.vduTargets(p)
			if err != nil {
				return err
			}
			av := props.get("aspect")
			aspect, err := av.str()
			if err != nil {
				return err
			}
			sa := fl.ScalingAspects[aspect]
			if sa == nil {
				return av.errf("policy %s refers to aspect %q, which no ScalingAspects policy of flavour %s defines (aspects: %s)", p.name, aspect, fc.fd.id, quoteList(sortedKeys(fl.ScalingAspects)))
			}
			dv := props.get("deltas")
			es, err := dv.entries()
			if err != nil {
				return err
			}
			deltas := map[string]int{}
			for _, e := range es {
				if deltas[e.key], err = dv.sub(e).get("number_of_instances").integer(); err != nil {
					return err
				}
			}
			for _, sd := range sa.StepDeltas {
				if _, ok := deltas[sd]; !ok {
					return dv.errf("policy %s has no delta %q, which aspect %s lists in step_deltas; add `%s: {number_of_instances: 1}`", p.name, sd, aspect, sd)
				}
			}
			if len(sa.StepDeltas) == 0 && len(deltas) > 1 {
				return aspectAt[aspect].errf("aspect %s has no step_deltas but policy %s defines %d deltas; list the delta of each step in step_deltas", aspect, p.name, len(deltas))
			}
			if sa.VduDeltas == nil {
				sa.VduDeltas = map[string]map[string]int{}
			}
			for _, t := range targets {
				if _, dup := sa.VduDeltas[t]; dup {
					return p.v.errf("VDU %s has two VduScalingAspectDeltas policies for aspect %s", t, aspect)
				}
				sa.VduDeltas[t] = maps.Clone(deltas)
			}
		case policyInstLevels:
			if err := fc.readInstLevels(p); err != nil {
				return err
			}
		}
	}
	for _, p := range ps {
		if p.kind != policyVduInstLevels {
			continue
		}
		targets, err := fc.vduTargets(p)
		if err != nil {
			return err
		}
		lv := p.v.get("properties").get("levels")
		es, err := lv.entries()
		if err != nil {
			return err
		}
		levels := map[string]int{}
		for _, e := range es {
			if _, ok := fl.InstantiationLevels[e.key]; !ok {
				return lv.sub(e).errf("policy %s names instantiation level %q, which the InstantiationLevels policy of flavour %s does not define (levels: %s)", p.name, e.key, fc.fd.id, quoteList(sortedKeys(fl.InstantiationLevels)))
			}
			if levels[e.key], err = lv.sub(e).get("number_of_instances").integer(); err != nil {
				return err
			}
		}
		for _, t := range targets {
			fl.VDUs[t].InstantiationLevels = maps.Clone(levels)
		}
	}
	return fc.checkCounts(aspectAt)
}

func (fc *flavourCtx) readInstLevels(p policy) error {
	fl := fc.fl
	if fl.InstantiationLevels != nil {
		return p.v.errf("flavour %s has two InstantiationLevels policies; keep one", fc.fd.id)
	}
	fl.InstantiationLevels = map[string]*model.InstantiationLevel{}
	props := p.v.get("properties")
	lv := props.get("levels")
	es, err := lv.entries()
	if err != nil {
		return err
	}
	for _, e := range es {
		l := lv.sub(e)
		il := &model.InstantiationLevel{ScaleLevels: map[string]int{}}
		if il.Description, err = l.get("description").optStr(); err != nil {
			return err
		}
		si := l.get("scale_info")
		ses, err := si.entries()
		if err != nil {
			return err
		}
		for _, se := range ses {
			sa := fl.ScalingAspects[se.key]
			if sa == nil {
				return si.sub(se).errf("instantiation level %s refers to aspect %q, which no ScalingAspects policy of flavour %s defines (aspects: %s)", e.key, se.key, fc.fd.id, quoteList(sortedKeys(fl.ScalingAspects)))
			}
			lvl, err := si.sub(se).get("scale_level").integer()
			if err != nil {
				return err
			}
			if lvl > sa.MaxScaleLevel {
				return si.sub(se).errf("instantiation level %s sets aspect %s to scale_level %d, above its max_scale_level %d", e.key, se.key, lvl, sa.MaxScaleLevel)
			}
			il.ScaleLevels[se.key] = lvl
		}
		for id := range fl.ScalingAspects {
			if _, ok := il.ScaleLevels[id]; !ok {
				il.ScaleLevels[id] = 0
			}
		}
		fl.InstantiationLevels[e.key] = il
	}
	dv := props.get("default_level")
	def, err := dv.optStr()
	if err != nil {
		return err
	}
	if def == "" && len(fl.InstantiationLevels) == 1 {
		def = sortedKeys(fl.InstantiationLevels)[0]
	}
	if def != "" {
		if _, ok := fl.InstantiationLevels[def]; !ok {
			return dv.errf("default_level %q is not one of the levels (%s)", def, quoteList(sortedKeys(fl.InstantiationLevels)))
		}
	}
	fl.DefaultInstantiationLevel = def
	return nil
}

// checkCounts checks every VDU's instance count stays within vdu_profile at
// every scale level, and compares VduInstantiationLevels with the aspects.
func (fc *flavourCtx) checkCounts(aspectAt map[string]val) error {
	fl := fc.fl
	for _, id := range sortedKeys(fl.VDUs) {
		v := fl.VDUs[id]
		vn := fc.nodes[id].v
		if v.InitialInstances < v.MinInstances || v.InitialInstances > v.MaxInstances {
			return vn.errf("VDU %s starts with %d instances (VduInitialDelta) but vdu_profile allows %d to %d", id, v.InitialInstances, v.MinInstances, v.MaxInstances)
		}
		top := map[string]int{}
		for aid, a := range fl.ScalingAspects {
			top[aid] = a.MaxScaleLevel
		}
		if n := fl.Instances(id, top); n > v.MaxInstances {
			return vn.errf("VDU %s would have %d instances with every aspect at its max_scale_level, more than vdu_profile.max_number_of_instances %d; lower max_scale_level or raise the maximum", id, n, v.MaxInstances)
		}
		for _, lid := range sortedKeys(v.InstantiationLevels) {
			want := v.InstantiationLevels[lid]
			if got := fl.Instances(id, fl.InstantiationLevels[lid].ScaleLevels); got != want {
				fc.r.p.warnf("%s: VduInstantiationLevels gives VDU %s %d instances at level %s, but its initial delta and scaling deltas give %d", fc.file, id, want, lid, got)
			}
		}
	}
	for _, aid := range sortedKeys(fl.ScalingAspects) {
		if a := fl.ScalingAspects[aid]; len(a.VduDeltas) == 0 {
			fc.r.p.warnf("%s:%d: scaling aspect %s scales no VDU (no VduScalingAspectDeltas policy refers to it)", fc.file, aspectAt[aid].pos().Line, aid)
		}
	}
	return nil
}
