package kubernetes_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kdrv "github.com/mini-vnfm/mini-vnfm/internal/infra/kubernetes"
	"github.com/mini-vnfm/mini-vnfm/internal/kubeworld"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/oidc"
	"github.com/mini-vnfm/mini-vnfm/internal/outbound/outboundtest"
	vimcheck "github.com/mini-vnfm/mini-vnfm/internal/vim"
)

const (
	oidcClientSecret = "oidc-client-secret-value"
	oidcPassword     = "oidc-password-value"
)

var oidcOnce struct {
	sync.Once
	vim model.VimConnectionInfo
	err error
}

// oidcVim is a VIM connection as Tacker registers an OIDC Kubernetes VIM:
// the API server, ssl_ca_cert holding the cluster's CA and the provider's,
// and the password grant's fields. Its user (oidc:alice) is bound to
// cluster-admin, and the API server accepts the provider's tokens when it
// returns (the API server reads the provider's keys in the background).
func oidcVim(t *testing.T) model.VimConnectionInfo {
	t.Helper()
	cs, admin := world(t)
	oidcOnce.Do(func() {
		idp := shared.idp
		idp.AddUser("alice", oidcPassword)
		idp.AddUser("mallory", oidcPassword) // no rights in the cluster
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "oidc-alice"},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cluster-admin"},
			Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: kubeworld.OIDCUserPrefix + "alice"}}}
		if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			oidcOnce.err = err
			return
		}
		ca := admin.InterfaceInfo["ssl_ca_cert"].(string) + "\n" + string(idp.CAPEM)
		oidcOnce.vim = model.VimConnectionInfo{ID: "vim-oidc", VimID: admin.VimID, VimType: admin.VimType,
			InterfaceInfo: map[string]any{"endpoint": admin.InterfaceInfo["endpoint"], "ssl_ca_cert": ca},
			AccessInfo: map[string]any{"oidc_token_url": idp.TokenURL(), "username": "alice", "password": oidcPassword,
				"client_id": idp.ClientID, "client_secret": oidcClientSecret}}
		oidcOnce.err = waitOIDCAccepted(ctx, oidcOnce.vim)
	})
	if oidcOnce.err != nil {
		t.Fatalf("OIDC VIM: %v", oidcOnce.err)
	}
	return oidcOnce.vim
}

// waitOIDCAccepted polls GET /api with a token of the provider until the
// API server accepts it (at most until ctx ends).
func waitOIDCAccepted(ctx context.Context, vim model.VimConnectionInfo) error {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM([]byte(vim.InterfaceInfo["ssl_ca_cert"].(string)))
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	a := vim.AccessInfo
	tok, err := oidc.Fetch(ctx, client, oidc.Credentials{TokenURL: a["oidc_token_url"].(string), Username: a["username"].(string),
		Password: a["password"].(string), ClientID: a["client_id"].(string), ClientSecret: a["client_secret"].(string)}, time.Now())
	if err != nil {
		return err
	}
	status := 0
	for ctx.Err() == nil {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, vim.InterfaceInfo["endpoint"].(string)+"/api", nil)
		req.Header.Set("Authorization", "Bearer "+tok.IDToken)
		if res, err := client.Do(req); err == nil {
			res.Body.Close()
			if status = res.StatusCode; status == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(250 * time.Millisecond):
		}
	}
	return fmt.Errorf("the API server did not accept the provider's token (last answer %d): %w", status, ctx.Err())
}

// TestOIDCVim: the registration's check of a VIM that authenticates with
// OIDC (Tacker's oidc_token_url form) passes, then a CNF is instantiated and
// terminated on it, the driver
// getting one ID token for both operations; a rejected password and a user
// without rights fail the operation with an error that says so, and no
// secret.
func TestOIDCVim(t *testing.T) {
	parallel(t)
	cs, _ := world(t)
	vim := oidcVim(t)
	namespace(t, cs, "oidc")
	drv := kdrv.New(kdrv.Options{ReadyTimeout: 4 * time.Minute, PollMax: 500 * time.Millisecond})
	on := func(v model.VimConnectionInfo) *cnf {
		c := newCNF(t, drv, testPackage, params("oidc", "deployment.yaml"))
		c.vim, c.in.VimConnectionInfo = v, []model.VimConnectionInfo{v}
		return c
	}
	// The registration's check (POST /v1.0/vims) passes on this API server.
	cred := maps.Clone(vim.AccessInfo)
	cred["ssl_ca_cert"] = vim.InterfaceInfo["ssl_ca_cert"]
	res, err := vimcheck.Verify(context.Background(), vimcheck.Target{Type: vimcheck.TypeKubernetes, AuthURL: vim.InterfaceInfo["endpoint"].(string),
		Project: map[string]any{"name": "oidc"}, Cred: cred, Outbound: outboundtest.Policy(0)})
	if err != nil || !slices.Contains(res.Regions, "oidc") || !slices.Contains(res.Regions, "kube-system") {
		t.Fatalf("verifying the OIDC VIM as its registration does: %+v, %v; want the namespaces as regions", res, err)
	}

	issued := shared.idp.Issued()
	c := on(vim)
	c.mustInstantiate()
	if _, err := cs.AppsV1().Deployments("oidc").Get(context.Background(), "vdu2", metav1.GetOptions{}); err != nil {
		t.Fatalf("the CNF's Deployment: %v", err)
	}
	c.mustTerminate()
	if _, err := cs.AppsV1().Deployments("oidc").Get(context.Background(), "vdu2", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the Deployment after terminate: %v, want it gone", err)
	}
	if n := shared.idp.Issued() - issued; n != 1 {
		t.Errorf("%d ID tokens got for an instantiation and a termination, want 1 (kept until it is about to expire)", n)
	}

	for _, tc := range []struct {
		name   string
		access map[string]any
		want   string
	}{
		{"wrong password", map[string]any{"password": "wrong-password-value"},
			fmt.Sprintf(`the OIDC provider at %s rejected the credentials of user "alice" for client "vnfm" (401 Unauthorized: invalid_grant)`, shared.idp.URL)},
		{"wrong client secret", map[string]any{"client_secret": "wrong-secret-value"},
			fmt.Sprintf(`the OIDC provider at %s rejected the credentials of user "alice" for client "vnfm" (401 Unauthorized: invalid_client)`, shared.idp.URL)},
		{"user without rights", map[string]any{"username": "mallory"}, `User "oidc:mallory" cannot`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := vim
			v.AccessInfo = maps.Clone(vim.AccessInfo)
			maps.Copy(v.AccessInfo, tc.access)
			err := on(v).instantiate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("instantiate: %v, want it to say %q", err, tc.want)
			}
			for _, secret := range []string{oidcPassword, oidcClientSecret, "wrong-password-value", "wrong-secret-value"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("the error shows a secret: %v", err)
				}
			}
		})
	}
}
