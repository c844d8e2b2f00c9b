package k8sstandin

import (
	"testing"

	"github.com/mini-vnfm/mini-vnfm/internal/kubeworld"
)

// apiFixture is a real API server on 127.0.0.1 (kubeworld) with a
// cluster-admin client of the stand-in's own.
type apiFixture struct {
	world *kubeworld.World
	admin *Client
}

func newAPIFixture(t *testing.T) *apiFixture {
	t.Helper()
	w := kubeworld.NewTest(t, kubeworld.Options{})
	kc, err := LoadKubeconfig(w.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := ClientFromKubeconfig(kc)
	if err != nil {
		t.Fatal(err)
	}
	return &apiFixture{world: w, admin: c}
}
