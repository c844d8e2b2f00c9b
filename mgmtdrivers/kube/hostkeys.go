package kube

import (
	"context"
	"sort"
	"strings"

	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/remote"
)

// SSH host key policy of a request (both drivers' top-level parameters):
//
//	ssh_host_key_policy: published | tofu | pinned
//	ssh_host_key_fingerprints: {"<VNFC id, server id or address>": ["SHA256:..."]}
//
// published (the default, unless the VIM's extra.ssh_host_key_policy says
// otherwise) verifies a VNF server's key at first contact against the
// fingerprints the VIM published, waiting for them (bounded) and refusing
// the server without them; pinned verifies against
// ssh_host_key_fingerprints, which must name every node; tofu pins whatever
// key answers first. Once pinned, a key must match on every later contact
// whatever the policy.
const (
	HostKeyPolicyKey       = "ssh_host_key_policy"
	HostKeyFingerprintsKey = "ssh_host_key_fingerprints"
)

// HostKeyParamKeys are the top-level keys the host key policy takes.
var HostKeyParamKeys = []string{HostKeyPolicyKey, HostKeyFingerprintsKey}

// HostKeys is a request's SSH host key policy.
type HostKeys struct {
	// Policy is the request's (""): not given.
	Policy remote.HostKeyTrust `json:"policy,omitempty"`
	// Fingerprints are the caller's, by VNFC id, server id or address.
	Fingerprints map[string][]string `json:"fingerprints,omitempty"`
}

// ReadHostKeys reads the host key policy from a driver's top-level
// parameter object.
func ReadHostKeys(o *Obj) HostKeys {
	var h HostKeys
	if o == nil {
		return h
	}
	if s := o.String(HostKeyPolicyKey, false); s != "" {
		t, err := remote.ParseHostKeyTrust(s)
		if err != nil {
			o.Addf(HostKeyPolicyKey, "is %q; say %s", s, remote.HostKeyTrusts)
		}
		h.Policy = t
	}
	if fo := o.Child(HostKeyFingerprintsKey, false); fo != nil {
		h.Fingerprints = map[string][]string{}
		keys := make([]string, 0, len(fo.m))
		for k := range fo.m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fps := fo.StringList(k)
			for _, f := range fps {
				if !strings.HasPrefix(f, "SHA256:") && !strings.HasPrefix(strings.ToUpper(f), "MD5:") {
					fo.Addf(k, "%q is not a host key fingerprint (SHA256:… as ssh-keygen -l prints it)", f)
				}
			}
			if len(fps) == 0 {
				fo.Addf(k, "lists no fingerprint")
			}
			h.Fingerprints[k] = fps
		}
	}
	if h.Policy == remote.TrustPinned && len(h.Fingerprints) == 0 {
		o.Addf(HostKeyFingerprintsKey, "is required with %s pinned: the nodes' fingerprints by VNFC id, server id or address", HostKeyPolicyKey)
	}
	if h.Policy != "" && h.Policy != remote.TrustPinned && len(h.Fingerprints) > 0 {
		o.Addf(HostKeyFingerprintsKey, "is only used with %s pinned (the policy is %s)", HostKeyPolicyKey, h.Policy)
	}
	return h
}

// VimHostKeyPolicy is the key of a VIM's extra (and of the VIM connection's
// extra) that sets the policy for the VIM's VNFs.
const VimHostKeyPolicy = "ssh_host_key_policy"

// Trust resolves the policy of an operation: the request's, else the VIM's,
// else published.
func (h HostKeys) Trust(vim *model.VimConnectionInfo) remote.HostKeyTrust {
	if h.Policy != "" {
		return h.Policy
	}
	if vim != nil {
		if s, _ := vim.Extra[VimHostKeyPolicy].(string); s != "" {
			if t, err := remote.ParseHostKeyTrust(s); err == nil && t != "" {
				return t
			}
		}
	}
	return remote.TrustPublished
}

// PublisherOf reads the published fingerprints of the operation's compute
// resources through its infra driver, when that publishes them (nil
// otherwise).
func PublisherOf(op *driverapi.Op) func(ctx context.Context, resourceID string) ([]string, error) {
	if op == nil {
		return nil
	}
	pub, ok := op.Infra.(driverapi.HostKeyPublisher)
	if !ok {
		return nil
	}
	return func(ctx context.Context, id string) ([]string, error) { return pub.PublishedHostKeys(ctx, op, id) }
}

// For returns the caller's fingerprints of a host, looked up by its keys
// (VNFC id, server id, address) in that order.
func (h HostKeys) For(keys ...string) []string {
	for _, k := range keys {
		if k == "" {
			continue
		}
		if fps, ok := h.Fingerprints[k]; ok {
			return fps
		}
	}
	return nil
}
