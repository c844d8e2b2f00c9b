package openstack

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/orchestration/v1/stackresources"

	"github.com/mini-vnfm/mini-vnfm/internal/appcred"
	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
)

var (
	_ driverapi.CredentialIssuer = (*Driver)(nil)
	_ driverapi.InfraOutputs     = (*Driver)(nil)
)

// IssueCredential implements driverapi.CredentialIssuer with a Keystone
// application credential of the VIM's user for the VIM's project
// (internal/appcred): the roles asked for, an expiry, access rules that
// confine its tokens to the services asked for.
func (d *Driver) IssueCredential(ctx context.Context, op *driverapi.Op, r driverapi.CredentialRequest) (*driverapi.Credential, error) {
	if suffix := driverapi.CredentialSuffix(op.Instance.ID); !strings.HasSuffix(r.Name, suffix) || r.Name == suffix {
		return nil, fmt.Errorf("a credential for VNF instance %s must be named <use>%s, not %q", op.Instance.ID, suffix, r.Name)
	}
	a, err := accessOf(osVim(op))
	if err != nil {
		return nil, err
	}
	c, err := d.clientsFor(ctx, a)
	if err != nil {
		return nil, err
	}
	ac, err := appcred.Issue(ctx, c.provider, appcred.Request{Name: r.Name, Description: r.Description, Roles: r.Roles, TTL: r.TTL,
		Services: r.Services}, time.Now())
	if err != nil {
		return nil, err
	}
	d.log(op).Info("application credential issued", "name", ac.Name, "id", ac.ID, "roles", ac.Roles, "services", ac.Services, "expires", ac.ExpiresAt)
	return &driverapi.Credential{Type: "v3applicationcredential", ID: ac.ID, Name: ac.Name, Secret: ac.Secret, AuthURL: a.Endpoint,
		Region: a.Region, ProjectID: ac.ProjectID, ExpiresAt: ac.ExpiresAt, Roles: ac.Roles, Services: ac.Services}, nil
}

// RevokeCredential implements driverapi.CredentialIssuer.
func (d *Driver) RevokeCredential(ctx context.Context, op *driverapi.Op, name string) error {
	a, err := accessOf(osVim(op))
	if err != nil {
		return err
	}
	c, err := d.clientsFor(ctx, a)
	if err != nil {
		return err
	}
	if err := appcred.RevokeName(ctx, c.provider, name); err != nil {
		return err
	}
	d.log(op).Info("application credential revoked", "name", name)
	return nil
}

// Outputs implements driverapi.InfraOutputs: the stack's outputs and the
// physical ids of its top-level resources.
func (d *Driver) Outputs(ctx context.Context, op *driverapi.Op) (*driverapi.Outputs, error) {
	c, err := d.connect(ctx, op)
	if err != nil {
		return nil, err
	}
	s, err := findStack(ctx, c, StackName(op.Instance.ID))
	if err != nil {
		return nil, err
	}
	if s == nil {
		return nil, errors.New("the VNF instance has no Heat stack")
	}
	out := &driverapi.Outputs{Values: map[string]any{}, Resources: map[string]string{}}
	for _, o := range s.Outputs {
		if k, _ := o["output_key"].(string); k != "" {
			out.Values[k] = o["output_value"]
		}
	}
	pages, err := stackresources.List(c.heat, s.Name, s.ID, stackresources.ListOpts{}).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("Heat: listing the resources of stack %s: %w", s.Name, err)
	}
	rs, err := stackresources.ExtractResources(pages)
	if err != nil {
		return nil, err
	}
	for _, r := range rs {
		if r.PhysicalID != "" {
			out.Resources[r.Name] = r.PhysicalID
		}
	}
	if out.Project, err = appcred.ProjectOf(ctx, c.provider); err != nil {
		return nil, err
	}
	return out, nil
}

// revokeIssued revokes every credential issued for the instance
// (driverapi.CredentialSuffix), before removeTagged: software of the VNF
// that still runs (kuryr-controller until its server is deleted) would
// otherwise re-create what removeTagged deletes.
func (d *Driver) revokeIssued(ctx context.Context, op *driverapi.Op, c *clients, node string) error {
	gone, err := appcred.RevokeSuffix(ctx, c.provider, driverapi.CredentialSuffix(op.Instance.ID))
	if len(gone) == 0 && (gophercloud.ResponseCodeIs(err, 404) || gophercloud.ResponseCodeIs(err, 403)) {
		// A Keystone without application credentials, or a policy that
		// hides them: none was issued through it.
		d.log(op).Info("no application credentials to revoke", "reason", err)
		return nil
	}
	if err != nil {
		return fmt.Errorf("revoking the credentials issued for the VNF instance: %w", err)
	}
	for _, name := range gone {
		progress{op}.note(ctx, node, "revoked application credential "+name+", issued for the VNF's software")
	}
	if len(gone) > 0 {
		d.log(op).Info("application credentials revoked", "names", gone)
	}
	return nil
}

// removeTagged deletes what software of the VNF made in the VIM with the
// instance's tag (driverapi.InstanceTag): Octavia load balancers (with
// their children) and Neutron ports — Kuryr's, for a cluster's Services and
// pods. They would otherwise outlive the cluster and keep its networks from
// being deleted (SubnetInUse, NetworkInUse).
func (d *Driver) removeTagged(ctx context.Context, op *driverapi.Op, c *clients, node string) error {
	tag := driverapi.InstanceTag(op.Instance.ID)
	p := progress{op}
	var lbIDs []string
	if oct, err := openstack.NewLoadBalancerV2(c.provider, gophercloud.EndpointOpts{Region: c.region, Availability: gophercloud.AvailabilityPublic}); err == nil {
		pages, err := loadbalancers.List(oct, loadbalancers.ListOpts{Tags: []string{tag}}).AllPages(ctx)
		if err != nil {
			return fmt.Errorf("Octavia: listing the load balancers tagged %s: %w", tag, err)
		}
		lbs, err := loadbalancers.ExtractLoadBalancers(pages)
		if err != nil {
			return err
		}
		for _, lb := range lbs {
			if !slices.Contains(lb.Tags, tag) {
				continue
			}
			lbIDs = append(lbIDs, lb.ID)
			if lb.ProvisioningStatus == "PENDING_DELETE" {
				continue
			}
			p.note(ctx, node, fmt.Sprintf("deleting load balancer %s (%s), made in the VIM by the VNF's software", lb.Name, lb.ID))
			err := loadbalancers.Delete(ctx, oct, lb.ID, loadbalancers.DeleteOpts{Cascade: true}).ExtractErr()
			for tries := 0; gophercloud.ResponseCodeIs(err, 409) && tries < 600; tries++ { // immutable while pending
				if err := sleep(ctx, 200*time.Millisecond); err != nil {
					return err
				}
				err = loadbalancers.Delete(ctx, oct, lb.ID, loadbalancers.DeleteOpts{Cascade: true}).ExtractErr()
			}
			if err != nil && !gophercloud.ResponseCodeIs(err, 404) {
				return fmt.Errorf("Octavia: deleting load balancer %s: %w", lb.ID, err)
			}
		}
		for _, id := range lbIDs {
			deadline := time.Now().Add(5 * time.Minute)
			for {
				_, err := loadbalancers.Get(ctx, oct, id).Extract()
				if gophercloud.ResponseCodeIs(err, 404) {
					break
				}
				if time.Now().After(deadline) {
					return fmt.Errorf("Octavia: load balancer %s still exists 5 minutes after its deletion", id)
				}
				if err := sleep(ctx, 200*time.Millisecond); err != nil {
					return err
				}
			}
		}
	}
	pages, err := ports.List(c.neutron, ports.ListOpts{Tags: tag}).AllPages(ctx)
	if err != nil {
		return fmt.Errorf("Neutron: listing the ports tagged %s: %w", tag, err)
	}
	ps, err := ports.ExtractPorts(pages)
	if err != nil {
		return err
	}
	for _, pt := range ps {
		if !slices.Contains(pt.Tags, tag) {
			continue
		}
		if err := ports.Delete(ctx, c.neutron, pt.ID).ExtractErr(); err != nil && !gophercloud.ResponseCodeIs(err, 404) {
			return fmt.Errorf("Neutron: deleting port %s: %w", pt.ID, err)
		}
	}
	if len(lbIDs) > 0 || len(ps) > 0 {
		d.log(op).Info("deleted what the VNF's software made in the VIM", "tag", tag, "loadBalancers", len(lbIDs), "ports", len(ps))
	}
	return nil
}
