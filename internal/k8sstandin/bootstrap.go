package k8sstandin

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"
	"time"
)

// Bootstrap tokens and the cluster-info signatures (the bootstrap signer).

const tokenAlphabet = "0123456789abcdefghijklmnopqrstuvwxyz"

func randToken(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = tokenAlphabet[int(b[i])%len(tokenAlphabet)]
	}
	return string(b)
}

// NewBootstrapToken returns a fresh "abcdef.0123456789abcdef" token.
func NewBootstrapToken() string { return randToken(6) + "." + randToken(16) }

// bootstrapTokenSecret is the kube-system Secret that backs a token.
func bootstrapTokenSecret(token string, ttl time.Duration, description string, now time.Time) Obj {
	id, secret, _ := strings.Cut(token, ".")
	data := map[string]string{
		"token-id":                       id,
		"token-secret":                   secret,
		"usage-bootstrap-authentication": "true",
		"usage-bootstrap-signing":        "true",
		"auth-extra-groups":              "system:bootstrappers:kubeadm:default-node-token",
	}
	if description != "" {
		data["description"] = description
	}
	if ttl > 0 {
		data["expiration"] = rfc3339(now.Add(ttl))
	}
	enc := Obj{}
	for k, v := range data {
		enc[k] = base64.StdEncoding.EncodeToString([]byte(v))
	}
	return Obj{"apiVersion": "v1", "kind": "Secret", "type": "bootstrap.kubernetes.io/token",
		"metadata": Obj{"name": "bootstrap-token-" + id, "namespace": "kube-system"}, "data": enc}
}

// jwsDetached signs payload with HS256 under the token secret and returns
// the detached compact serialization ("header..signature"), as the
// bootstrap signer stores it in cluster-info.
func jwsDetached(tokenID, tokenSecret, payload string) string {
	hdr := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"HS256","kid":"` + tokenID + `"}`))
	body := base64.RawURLEncoding.EncodeToString([]byte(payload))
	mac := hmac.New(sha256.New, []byte(tokenSecret))
	mac.Write([]byte(hdr + "." + body))
	return hdr + ".." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// signClusterInfo adds a jws-kubeconfig-<id> entry to cluster-info for every
// live signing token (done lazily on read instead of by a controller, so
// expired tokens lose their signature at once).
func (s *APIServer) signClusterInfo(ctx context.Context, cm Obj) Obj {
	data := getMap(cm, "data")
	if data == nil {
		return cm
	}
	for k := range data {
		if strings.HasPrefix(k, "jws-kubeconfig-") {
			delete(data, k)
		}
	}
	payload, _ := data["kubeconfig"].(string)
	secs, err := s.listLive(ctx, resSecrets, "kube-system")
	if err != nil {
		return cm
	}
	for _, sec := range secs {
		if getStr(sec, "type") != "bootstrap.kubernetes.io/token" || secretData(sec, "usage-bootstrap-signing") != "true" {
			continue
		}
		id, secret := secretData(sec, "token-id"), secretData(sec, "token-secret")
		if id == "" || secret == "" {
			continue
		}
		data["jws-kubeconfig-"+id] = jwsDetached(id, secret, payload)
	}
	return cm
}

// verifyClusterInfo checks the JWS of token over the cluster-info kubeconfig.
func verifyClusterInfo(cm Obj, token string) error {
	id, secret, _ := strings.Cut(token, ".")
	data := getMap(cm, "data")
	sig, _ := data["jws-kubeconfig-"+id].(string)
	if sig == "" {
		return fmt.Errorf("could not find a JWS signature in the cluster-info ConfigMap for token ID %q", id)
	}
	payload, _ := data["kubeconfig"].(string)
	if !hmac.Equal([]byte(sig), []byte(jwsDetached(id, secret, payload))) {
		return fmt.Errorf("failed to verify JWS signature of received cluster info object, can't trust this API Server")
	}
	return nil
}
