package vim

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/tokens"
)

// Keystone's default domain, used when neither a domain name nor id is given
// (the Tacker CLI sends "" for domain keys missing from vim.yaml).
const defaultDomain = "Default"

// KeystoneAuth is the Keystone v3 password authentication of an OpenStack
// VIM, read from Tacker's vim_project and auth_cred.
type KeystoneAuth struct {
	Username, UserID             string
	Password                     string
	UserDomainName, UserDomainID string
	ProjectName, ProjectID       string
	ProjectDomainName            string
	ProjectDomainID              string
}

// User names the user for messages.
func (k KeystoneAuth) User() string {
	if k.Username != "" {
		return k.Username
	}
	return k.UserID
}

// Project names the project for messages.
func (k KeystoneAuth) Project() string {
	if k.ProjectName != "" {
		return k.ProjectName
	}
	return k.ProjectID
}

// OpenStackAuth reads the Keystone authentication from vim_project and
// auth_cred (auth_cred's project_* keys are a fallback, as Tacker shows
// them there). It checks that the pieces Keystone needs are present.
func OpenStackAuth(project, cred map[string]any) (KeystoneAuth, error) {
	pick := func(keys ...string) string {
		for _, m := range []map[string]any{project, cred} {
			for _, k := range keys {
				if s := strings.TrimSpace(Str(m, k)); s != "" {
					return s
				}
			}
		}
		return ""
	}
	k := KeystoneAuth{
		Username: strings.TrimSpace(Str(cred, "username")), UserID: strings.TrimSpace(Str(cred, "user_id")),
		Password:       Str(cred, "password"),
		UserDomainName: strings.TrimSpace(Str(cred, "user_domain_name")), UserDomainID: strings.TrimSpace(Str(cred, "user_domain_id")),
		ProjectName: pick("name", "project_name"), ProjectID: pick("id", "project_id"),
		ProjectDomainName: pick("project_domain_name"), ProjectDomainID: pick("project_domain_id"),
	}
	switch {
	case k.Username == "" && k.UserID == "":
		return k, failf(nil, "auth_cred.username (or user_id) is required for an OpenStack VIM")
	case k.Password == "":
		return k, failf(nil, "auth_cred.password is required for an OpenStack VIM")
	case k.ProjectName == "" && k.ProjectID == "":
		return k, failf(nil, "vim_project.name (or id) is required for an OpenStack VIM")
	}
	if k.UserID == "" && k.UserDomainName == "" && k.UserDomainID == "" {
		k.UserDomainName = defaultDomain
	}
	if k.ProjectID == "" && k.ProjectDomainName == "" && k.ProjectDomainID == "" {
		k.ProjectDomainName = defaultDomain
	}
	return k, nil
}

// AuthOptions returns the gophercloud options for a project-scoped token.
func (k KeystoneAuth) AuthOptions(authURL string) gophercloud.AuthOptions {
	o := gophercloud.AuthOptions{IdentityEndpoint: authURL, Password: k.Password}
	if k.UserID != "" {
		o.UserID = k.UserID // a user id is global: no domain
	} else {
		o.Username, o.DomainName, o.DomainID = k.Username, k.UserDomainName, k.UserDomainID
		if o.DomainID != "" {
			o.DomainName = ""
		}
	}
	s := &gophercloud.AuthScope{ProjectID: k.ProjectID}
	if k.ProjectID == "" {
		s.ProjectName, s.DomainName, s.DomainID = k.ProjectName, k.ProjectDomainName, k.ProjectDomainID
		if s.DomainID != "" {
			s.DomainName = ""
		}
	}
	o.Scope = s
	return o
}

func verifyOpenStack(ctx context.Context, t Target, client *http.Client, timeout time.Duration) (*Result, error) {
	k, err := OpenStackAuth(t.Project, t.Cred)
	if err != nil {
		return nil, err
	}
	provider, err := openstack.NewClient(t.AuthURL)
	if err != nil {
		return nil, failf(err, "auth_url %q is not a Keystone URL: %v", t.AuthURL, err)
	}
	provider.HTTPClient = *client
	provider.UserAgent.Prepend("mini-vnfm")
	opts := k.AuthOptions(t.AuthURL)
	if err := openstack.Authenticate(ctx, provider, opts); err != nil {
		return nil, keystoneError(t.AuthURL, k, timeout, err)
	}
	res := &Result{}
	if cr, ok := provider.GetAuthResult().(tokens.CreateResult); ok {
		if cat, err := cr.ExtractServiceCatalog(); err == nil {
			for _, e := range cat.Entries {
				for _, ep := range e.Endpoints {
					switch {
					case ep.RegionID != "":
						res.Regions = append(res.Regions, ep.RegionID)
					case ep.Region != "":
						res.Regions = append(res.Regions, ep.Region)
					}
				}
			}
		}
	}
	res.Regions = uniqSorted(res.Regions)
	return res, nil
}

// keystoneError explains a failed token request.
func keystoneError(authURL string, k KeystoneAuth, timeout time.Duration, err error) *Error {
	var code gophercloud.ErrUnexpectedResponseCode
	if errors.As(err, &code) {
		// Keystone's error message is the remote's body: not repeated.
		switch code.Actual {
		case http.StatusUnauthorized:
			return failf(err, "Keystone rejected the credentials for user %q at %s (%s)", k.User(), authURL, statusText(code.Actual))
		case http.StatusForbidden:
			return failf(err, "Keystone at %s authenticated user %q but refused a token for project %q (%s); give the user a role in that project", authURL, k.User(), k.Project(), statusText(code.Actual))
		case http.StatusNotFound:
			return failf(err, "no Keystone v3 identity API at %s (%s %s answered %s); auth_url usually ends in /v3 or /identity/v3", authURL, code.Method, code.URL, statusText(code.Actual))
		}
		return failf(err, "Keystone at %s refused the token request for user %q (%s)", authURL, k.User(), statusText(code.Actual))
	}
	var missing gophercloud.ErrMissingInput
	if errors.As(err, &missing) {
		return failf(err, "the VIM credentials lack %s", missing.Argument)
	}
	if strings.Contains(err.Error(), "Unable to find") || strings.Contains(err.Error(), "unrecognized identity version") {
		return failf(err, "no Keystone v3 identity API found at %s by version discovery; give the versioned URL (…/v3)", authURL)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return reachError("Keystone", authURL, timeout, err)
	}
	return failf(err, "Keystone token request to %s failed: %v", authURL, err)
}
