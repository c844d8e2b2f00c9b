package kubeworld

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// VimAccess is what a Kubernetes VIM is registered with: the API server,
// its CA and a ServiceAccount's bearer token, as a cluster's management
// driver registers the cluster it built.
type VimAccess struct {
	Server, CAPEM, Token string
}

// VimAccess makes (once) ServiceAccount kube-system/<name> bound to
// cluster-admin and returns a day-long token of it.
func (w *World) VimAccess(ctx context.Context, name string) (VimAccess, error) {
	cs, err := w.Clientset()
	if err != nil {
		return VimAccess{}, err
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system"}}
	if _, err := cs.CoreV1().ServiceAccounts("kube-system").Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return VimAccess{}, fmt.Errorf("kubeworld: service account %s: %w", name, err)
	}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "vim-" + name},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: "kube-system"}}}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return VimAccess{}, fmt.Errorf("kubeworld: binding %s: %w", name, err)
	}
	exp := int64(24 * 3600)
	tr, err := cs.CoreV1().ServiceAccounts("kube-system").CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	if err != nil {
		return VimAccess{}, fmt.Errorf("kubeworld: token of %s: %w", name, err)
	}
	ca, err := os.ReadFile(filepath.Join(w.Dir, "pki", "ca.crt"))
	if err != nil {
		return VimAccess{}, err
	}
	return VimAccess{Server: w.Server, CAPEM: string(ca), Token: tr.Status.Token}, nil
}
