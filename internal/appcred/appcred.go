// Package appcred issues and revokes Keystone application credentials: the
// short-lived, least-privilege OpenStack credential the VNFM gives software
// inside a cluster it builds (Kuryr-Kubernetes' controller) instead of the
// VIM's own password, which never leaves the VNFM.
//
// A credential is created by the VIM's user for the VIM's project with only
// the roles asked for (default member), an expiry (default 30 days) and
// access rules that confine its tokens to the services named (default
// Neutron and Octavia), restricted (it cannot create further credentials
// or trusts). The secret is returned once, to be handed on; the VNFM keeps
// only the id, to revoke the credential when the cluster goes.
package appcred

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/applicationcredentials"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/tokens"
)

// Defaults.
const (
	DefaultTTL  = 30 * 24 * time.Hour
	DefaultRole = "member"
	MaxTTL      = 366 * 24 * time.Hour
)

// DefaultServices are the catalog service types a credential's tokens may
// call by default: what Kuryr-Kubernetes uses.
var DefaultServices = []string{"network", "load-balancer"}

// Request describes a credential to issue.
type Request struct {
	// Name must be unique for the VIM's user (e.g. kuryr-<instance id>).
	Name        string
	Description string
	// Roles, a subset of the user's roles in the project (default member).
	Roles []string
	// TTL is the lifetime (default DefaultTTL, at most MaxTTL).
	TTL time.Duration
	// Services are the catalog types its tokens may use (default
	// DefaultServices); every method and path of those only.
	Services []string
}

// Credential is an issued credential. Secret is shown only here.
type Credential struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Secret    string    `json:"-"`
	UserID    string    `json:"userId"`
	ProjectID string    `json:"projectId"`
	ExpiresAt time.Time `json:"expiresAt"`
	Roles     []string  `json:"roles"`
	Services  []string  `json:"services"`
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,254}$`)

// identity returns the Keystone client and the user and project of the
// provider's token.
func identity(ctx context.Context, p *gophercloud.ProviderClient) (*gophercloud.ServiceClient, string, string, error) {
	ic, err := openstack.NewIdentityV3(p, gophercloud.EndpointOpts{})
	if err != nil {
		return nil, "", "", fmt.Errorf("Keystone: %w", err)
	}
	res := tokens.Get(ctx, ic, p.Token())
	user, err := res.ExtractUser()
	if err != nil {
		return nil, "", "", fmt.Errorf("Keystone: reading the VIM user's token: %w", err)
	}
	proj, err := res.ExtractProject()
	if err != nil || proj == nil {
		return nil, "", "", fmt.Errorf("Keystone: the VIM credentials are not scoped to a project: %v", err)
	}
	return ic, user.ID, proj.ID, nil
}

// Issue creates a credential for the provider's user and project.
func Issue(ctx context.Context, p *gophercloud.ProviderClient, r Request, now time.Time) (*Credential, error) {
	if !nameRE.MatchString(r.Name) {
		return nil, fmt.Errorf("application credential name %q: 1-255 letters, digits, '_', '.', '-'", r.Name)
	}
	if r.TTL == 0 {
		r.TTL = DefaultTTL
	}
	if r.TTL < time.Minute || r.TTL > MaxTTL {
		return nil, fmt.Errorf("application credential lifetime %v: between 1m and %v", r.TTL, MaxTTL)
	}
	if len(r.Roles) == 0 {
		r.Roles = []string{DefaultRole}
	}
	if len(r.Services) == 0 {
		r.Services = DefaultServices
	}
	ic, userID, projectID, err := identity(ctx, p)
	if err != nil {
		return nil, err
	}
	exp := now.Add(r.TTL).UTC().Truncate(time.Second)
	opts := applicationcredentials.CreateOpts{Name: r.Name, Description: r.Description, ExpiresAt: &exp}
	for _, role := range r.Roles {
		opts.Roles = append(opts.Roles, applicationcredentials.Role{Name: role})
	}
	for _, s := range r.Services {
		opts.AccessRules = append(opts.AccessRules, applicationcredentials.AccessRule{Service: s, Method: "*", Path: "/**"})
	}
	ac, err := applicationcredentials.Create(ctx, ic, userID, opts).Extract()
	if gophercloud.ResponseCodeIs(err, 409) {
		// A credential of that name exists (a retried operation whose
		// secret was not kept): replace it.
		if err := revokeByName(ctx, ic, userID, r.Name); err != nil {
			return nil, err
		}
		ac, err = applicationcredentials.Create(ctx, ic, userID, opts).Extract()
	}
	if err != nil {
		if gophercloud.ResponseCodeIs(err, 403) {
			return nil, fmt.Errorf("Keystone refused an application credential with roles %v for the VIM user (it must hold them in the project): %w", r.Roles, err)
		}
		return nil, fmt.Errorf("Keystone: creating application credential %s: %w", r.Name, err)
	}
	if ac.Secret == "" {
		return nil, errors.New("Keystone returned an application credential without its secret")
	}
	return &Credential{ID: ac.ID, Name: ac.Name, Secret: ac.Secret, UserID: userID, ProjectID: projectID, ExpiresAt: exp,
		Roles: r.Roles, Services: r.Services}, nil
}

func revokeByName(ctx context.Context, ic *gophercloud.ServiceClient, userID, name string) error {
	pages, err := applicationcredentials.List(ic, userID, applicationcredentials.ListOpts{Name: name}).AllPages(ctx)
	if err != nil {
		return fmt.Errorf("Keystone: listing application credentials: %w", err)
	}
	l, err := applicationcredentials.ExtractApplicationCredentials(pages)
	if err != nil {
		return err
	}
	for _, c := range l {
		if c.Name == name {
			if err := applicationcredentials.Delete(ctx, ic, userID, c.ID).ExtractErr(); err != nil && !gophercloud.ResponseCodeIs(err, 404) {
				return fmt.Errorf("Keystone: deleting application credential %s: %w", c.ID, err)
			}
		}
	}
	return nil
}

// RevokeName deletes the credentials of that name of the provider's user
// (none: success).
func RevokeName(ctx context.Context, p *gophercloud.ProviderClient, name string) error {
	ic, userID, _, err := identity(ctx, p)
	if err != nil {
		return err
	}
	return revokeByName(ctx, ic, userID, name)
}

// RevokeSuffix deletes every credential of the provider's user whose name
// ends with suffix (a VNF instance's: "-<instance id>") and returns their
// names.
func RevokeSuffix(ctx context.Context, p *gophercloud.ProviderClient, suffix string) ([]string, error) {
	if suffix == "" {
		return nil, errors.New("appcred: an empty suffix would match every credential")
	}
	ic, userID, _, err := identity(ctx, p)
	if err != nil {
		return nil, err
	}
	pages, err := applicationcredentials.List(ic, userID, applicationcredentials.ListOpts{}).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("Keystone: listing application credentials: %w", err)
	}
	l, err := applicationcredentials.ExtractApplicationCredentials(pages)
	if err != nil {
		return nil, err
	}
	var gone []string
	for _, c := range l {
		if !strings.HasSuffix(c.Name, suffix) {
			continue
		}
		if err := applicationcredentials.Delete(ctx, ic, userID, c.ID).ExtractErr(); err != nil && !gophercloud.ResponseCodeIs(err, 404) {
			return gone, fmt.Errorf("Keystone: deleting application credential %s: %w", c.ID, err)
		}
		gone = append(gone, c.Name)
	}
	return gone, nil
}

// ProjectOf is the project the provider's token is scoped to.
func ProjectOf(ctx context.Context, p *gophercloud.ProviderClient) (string, error) {
	_, _, project, err := identity(ctx, p)
	return project, err
}

// Revoke deletes a credential (already gone is success): its tokens stop
// working at once.
func Revoke(ctx context.Context, p *gophercloud.ProviderClient, id string) error {
	ic, userID, _, err := identity(ctx, p)
	if err != nil {
		return err
	}
	if err := applicationcredentials.Delete(ctx, ic, userID, id).ExtractErr(); err != nil && !gophercloud.ResponseCodeIs(err, 404) {
		return fmt.Errorf("Keystone: revoking application credential %s: %w", id, err)
	}
	return nil
}
