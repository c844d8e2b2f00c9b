package kubeadm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
	"github.com/mini-vnfm/mini-vnfm/mgmtdrivers/kube/kuryr"
)

// Kuryr-Kubernetes (cni: kuryr, seed 001's VNF-A with Kuryr): the install
// script applies Kuryr's manifests on the first master with
// kuryr-controller's kuryr.conf, which the driver renders from the kuryr
// parameters resolved against the infra driver's outputs (the base HOT's
// kuryr_* outputs by default) and a credential the infra driver issues for
// it: on OpenStack a Keystone application credential of the VIM's user,
// roles member (kuryr.credential.roles), confined to Neutron and Octavia,
// expiring (kuryr.credential.ttl) — never the VIM's password. The
// credential's secret goes to the master as a root-only file that the
// script turns into the Secret kube-system/kuryr-config and removes; it is
// masked in every log and error and never put in the progress. Terminate
// (and the rollback of an instantiation) revokes it.

// kuryrConfPath is where the rendered kuryr.conf is staged on the master.
const kuryrConfPath = remoteDir + "/kuryr.conf"

// KuryrCredentialName names a cluster's Kuryr credential in the VIM.
func KuryrCredentialName(instanceID string) string { return "kuryr-" + instanceID }

// kuryrServices are the VIM services kuryr-controller calls.
var kuryrServices = []string{"network", "load-balancer"}

// checkKuryr refuses, when an instantiation is accepted, cni kuryr on a VIM
// whose infra driver cannot issue credentials or publish its outputs.
func checkKuryr(a *driverapi.Accept, p *Params) error {
	if p.CNI != CNIKuryr {
		return nil
	}
	_, issues := a.Infra.(driverapi.CredentialIssuer)
	_, outputs := a.Infra.(driverapi.InfraOutputs)
	if a.Infra == nil || !issues || !outputs {
		return fmt.Errorf("%s.cni: kuryr needs a VIM whose infra driver issues credentials for the cluster and publishes the network ids (OpenStack); this instance's VIM does not", root)
	}
	return nil
}

// kuryrConfig resolves the Kuryr parameters, issues kuryr-controller's
// credential and renders kuryr.conf; it returns the file and the secret to
// mask.
func (h *hook) kuryrConfig(ctx context.Context) (string, string, error) {
	infra := h.op.Infra
	issuer, ok1 := infra.(driverapi.CredentialIssuer)
	outputs, ok2 := infra.(driverapi.InfraOutputs)
	if !ok1 || !ok2 {
		return "", "", errors.New("cni kuryr: the infra driver of this VIM neither issues credentials nor publishes outputs")
	}
	outs, err := outputs.Outputs(ctx, h.op)
	if err != nil {
		return "", "", fmt.Errorf("reading the infra driver's outputs for Kuryr: %w", err)
	}
	kp := h.p.Kuryr
	res, err := kp.Resolve(kuryr.Stack{Outputs: outs.Values, Resources: outs.Resources}, outs.Project)
	if err != nil {
		return "", "", err
	}
	cred, err := issuer.IssueCredential(ctx, h.op, driverapi.CredentialRequest{Name: KuryrCredentialName(h.op.Instance.ID),
		Description: "kuryr-controller of the Kubernetes cluster of VNF instance " + h.op.Instance.ID + " (mini-VNFM)",
		Roles:       kp.CredentialRoles, TTL: kp.CredentialTTL, Services: kuryrServices})
	if err != nil {
		return "", "", fmt.Errorf("issuing kuryr-controller's credential: %w", err)
	}
	conf := kuryr.Render(*kp, res, kuryr.Conf{APIRoot: h.topo.Endpoint(), AuthURL: cred.AuthURL, Region: cred.Region,
		CredentialID: cred.ID, CredentialSecret: cred.Secret, ResourceTags: []string{driverapi.InstanceTag(h.op.Instance.ID)}})
	h.note(ctx, "Kuryr-Kubernetes: kuryr-controller gets application credential %s (roles %s, %s only, expires %s); pod subnet %s, service subnet %s, pod security groups %s, project %s",
		cred.ID, strings.Join(cred.Roles, ", "), strings.Join(cred.Services, " and "), cred.ExpiresAt.Format("2006-01-02T15:04Z"),
		res.PodSubnet, res.ServiceSubnet, strings.Join(res.PodSecurityGroups, ", "), res.Project)
	return conf, cred.Secret, nil
}

// kuryrArgs stages kuryr.conf on the first master and returns the install
// script's arguments for it.
func (h *hook) kuryrArgs(ctx context.Context, ms *session, script []byte) ([]string, error) {
	if h.p.CNI != CNIKuryr {
		return nil, nil
	}
	if !bytes.Contains(script, []byte("--kuryr-config")) {
		return nil, fmt.Errorf("%s.cni is kuryr, but the install script %s has no --cni kuryr: leave script_path empty (the driver's script) or ship a current copy", root, h.p.ScriptPath)
	}
	conf, secret, err := h.kuryrConfig(ctx)
	if err != nil {
		return nil, err
	}
	ms.x.AddSecrets(secret)
	if err := h.d.uploadStaged(ctx, ms, kuryrConfPath, conf, 0o600); err != nil {
		return nil, err
	}
	return []string{"--cni", CNIKuryr, "--kuryr-config", kuryrConfPath}, nil
}

// revokeKuryr revokes the cluster's Kuryr credential (terminate, rollback).
func (d *Driver) revokeKuryr(ctx context.Context, op *driverapi.Op, p *Params) error {
	if p.CNI != CNIKuryr {
		return nil
	}
	issuer, ok := op.Infra.(driverapi.CredentialIssuer)
	if !ok {
		return nil
	}
	if err := issuer.RevokeCredential(ctx, op, KuryrCredentialName(op.Instance.ID)); err != nil {
		return fmt.Errorf("revoking kuryr-controller's credential: %w", err)
	}
	return nil
}
