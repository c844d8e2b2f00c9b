package kubeadm

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/remote"

	"go.yaml.in/yaml/v3"
)

func TestNewToken(t *testing.T) {
	seen := map[string]bool{}
	for range 200 {
		tok := newToken()
		if !tokenRE.MatchString(tok) {
			t.Fatalf("token %q is not a bootstrap token ([a-z0-9]{6}.[a-z0-9]{16})", tok)
		}
		if seen[tok] {
			t.Fatalf("token %q twice", tok)
		}
		seen[tok] = true
	}
}

// The Secrets are kubeadm's bootstrap tokens: what kubeadm token create
// writes, with the expiry left for the master to fill in.
func TestTokenSecrets(t *testing.T) {
	toks := map[string]string{"w1": "abcdef.0123456789abcdef", "m2": "ghijkl.0123456789ghijkl"}
	desc := map[string]string{"w1": `mini-VNFM join of w1 (op "x")`, "m2": "mini-VNFM control-plane join of m2"}
	out := tokenSecrets(toks, []string{"w1", "m2"}, desc)
	docs := strings.Split(strings.TrimSuffix(out, "---\n"), "---\n")
	if len(docs) != 2 {
		t.Fatalf("%d documents:\n%s", len(docs), out)
	}
	for i, name := range []string{"w1", "m2"} {
		var s struct {
			Kind     string `yaml:"kind"`
			Type     string `yaml:"type"`
			Metadata struct {
				Name      string `yaml:"name"`
				Namespace string `yaml:"namespace"`
			} `yaml:"metadata"`
			Data map[string]string `yaml:"stringData"`
		}
		if err := yaml.Unmarshal([]byte(docs[i]), &s); err != nil {
			t.Fatalf("%v:\n%s", err, docs[i])
		}
		id, secret, _ := strings.Cut(toks[name], ".")
		want := map[string]string{"token-id": id, "token-secret": secret, "description": desc[name], "expiration": expiryMark,
			"usage-bootstrap-authentication": "true", "usage-bootstrap-signing": "true", "auth-extra-groups": bootstrapGroup}
		if s.Kind != "Secret" || s.Type != "bootstrap.kubernetes.io/token" || s.Metadata.Name != "bootstrap-token-"+id || s.Metadata.Namespace != "kube-system" {
			t.Errorf("%s: %+v", name, s)
		}
		for k, v := range want {
			if s.Data[k] != v {
				t.Errorf("%s: %s = %q, want %q", name, k, s.Data[k], v)
			}
		}
	}
}

// poolRun records the commands a token pool runs on its master; while hold
// is set, a deletion waits for release.
type poolRun struct {
	mu      sync.Mutex
	cmds    []string
	hold    chan struct{} // a deletion signals here, then waits for release
	release chan struct{}
}

func (r *poolRun) run(_ context.Context, cmd string, _ remote.RunOpts) (remote.Result, error) {
	r.mu.Lock()
	r.cmds = append(r.cmds, cmd)
	hold, release := r.hold, r.release
	r.mu.Unlock()
	if hold != nil && strings.Contains(cmd, "drop-tokens") {
		hold <- struct{}{}
		<-release
	}
	return remote.Result{}, nil
}

// deletions are the arguments of the drop commands run so far (the
// certificates flag, then the Secrets).
func (r *poolRun) deletions() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, c := range r.cmds {
		if _, args, ok := strings.Cut(c, "' drop-tokens "); ok {
			out = append(out, args)
		}
	}
	return out
}

func testPool(r *poolRun, nodes ...string) *tokenPool {
	p := &tokenPool{d: New(Options{}), ms: &session{node: &Node{Name: "m1"}, log: slog.New(slog.DiscardHandler)}, ttl: time.Hour,
		toks: map[string]string{}, desc: map[string]string{}, unused: map[string]bool{}, deleted: map[string]bool{},
		bg: &sync.WaitGroup{}, run: r.run}
	for _, n := range nodes {
		p.order = append(p.order, n)
		p.toks[n] = newToken()
	}
	return p
}

func tokenSecret(p *tokenPool, node string) string {
	id, _, _ := strings.Cut(p.toks[node], ".")
	return "bootstrap-token-" + id
}

// Each token goes as soon as its join no longer needs it, the ones that
// became unused during a deletion together in the next; the deletion after
// the last control-plane join carries only its token and the uploaded
// certificates (with their owner), in one round trip; every token is
// deleted exactly once.
func TestTokenPoolDeletesAsJoinsEnd(t *testing.T) {
	ctx := context.Background()
	r := &poolRun{}
	p := testPool(r, "m2", "m3", "w1", "w2", "w3")
	p.setCertOwners([]string{"bootstrap-token-owner1"})
	if _, err := p.get(ctx, &Node{Name: "w1"}); err != nil {
		t.Fatal(err)
	}
	if len(r.cmds) != 1 || !strings.Contains(r.cmds[0], "mint-tokens") {
		t.Fatalf("commands after the first get: %q, want one mint", r.cmds)
	}
	// Two workers end; a deletion is held while the third worker and the
	// first control-plane join end: both go in the next round trip.
	r.hold, r.release = make(chan struct{}), make(chan struct{})
	p.used(ctx, &Node{Name: "w1"})
	<-r.hold
	p.used(ctx, &Node{Name: "w2"})
	p.used(ctx, &Node{Name: "m2"})
	r.release <- struct{}{}
	<-r.hold
	r.release <- struct{}{}
	p.bg.Wait()
	d := r.deletions()
	if len(d) != 2 {
		t.Fatalf("%d deletions, want 2: %q", len(d), d)
	}
	if !strings.Contains(d[0], tokenSecret(p, "w1")) || strings.Contains(d[0], tokenSecret(p, "w2")) {
		t.Errorf("first deletion %q: want w1's token alone", d[0])
	}
	if !strings.Contains(d[1], tokenSecret(p, "w2")) || !strings.Contains(d[1], tokenSecret(p, "m2")) || strings.Contains(d[1], tokenSecret(p, "w1")) {
		t.Errorf("second deletion %q: want w2's and m2's tokens, not w1's again", d[1])
	}
	for _, c := range d {
		if strings.Contains(c, tokenSecret(p, "m3")) || strings.Contains(c, tokenSecret(p, "w3")) || strings.Contains(c, "kubeadm-certs") {
			t.Errorf("deletion %q: a token still needed, or the certificates before the last control-plane join", c)
		}
	}
	r.hold = nil
	// The last control-plane join: its token and the certificates.
	if !p.alsoDropCerts(ctx, &Node{Name: "m3"}) {
		t.Fatal("alsoDropCerts: the pool is not finished")
	}
	p.used(ctx, &Node{Name: "m3"}) // said again by the join's own clean-up: no effect
	p.bg.Wait()
	d = r.deletions()
	if len(d) != 3 {
		t.Fatalf("%d deletions, want 3: %q", len(d), d)
	}
	for _, want := range []string{tokenSecret(p, "m3"), "kubeadm-certs", "bootstrap-token-owner1"} {
		if !strings.Contains(d[2], want) {
			t.Errorf("last control-plane join's deletion %q lacks %s", d[2], want)
		}
	}
	for _, n := range []string{"w1", "w2", "m2", "w3"} {
		if strings.Contains(d[2], tokenSecret(p, n)) {
			t.Errorf("last control-plane join's deletion %q carries %s's token", d[2], n)
		}
	}
	// finish deletes what no join said (w3's, done in an earlier run).
	p.finish(ctx)
	d = r.deletions()
	if len(d) != 4 || !strings.Contains(d[3], tokenSecret(p, "w3")) {
		t.Fatalf("deletions after finish: %q, want a fourth with w3's token", d)
	}
	for _, n := range p.order {
		count := 0
		for _, c := range d {
			count += strings.Count(c, tokenSecret(p, n))
		}
		if count != 1 {
			t.Errorf("%s's token deleted %d times", n, count)
		}
	}
	if p.alsoDropCerts(ctx, nil) {
		t.Error("alsoDropCerts after finish: true, want false (the caller deletes the certificates itself)")
	}
}

// Tokens never created are never deleted.
func TestTokenPoolUncreated(t *testing.T) {
	r := &poolRun{}
	p := testPool(r, "w1", "w2")
	p.used(context.Background(), &Node{Name: "w1"})
	p.finish(context.Background())
	if len(r.cmds) != 0 {
		t.Fatalf("commands: %q, want none", r.cmds)
	}
}

// Tokens kubeadm init made from the install script's stdin are not made
// again; they are deleted like minted ones.
func TestTokenPoolMadeByInit(t *testing.T) {
	ctx := context.Background()
	r := &poolRun{}
	p := testPool(r, "m2", "w1")
	p.desc["w1"] = "mini-VNFM join of w1\n(op x)"
	lines := strings.Split(strings.TrimSuffix(p.initLines(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("initLines: %q, want a line per token", lines)
	}
	for i, name := range p.order {
		tok, desc, _ := strings.Cut(lines[i], " ")
		if tok != p.toks[name] || strings.Contains(desc, "\n") || !strings.HasPrefix(desc, strings.SplitN(p.desc[name], "\n", 2)[0]) {
			t.Errorf("line %d %q: want %s's token, then its description on one line", i, lines[i], name)
		}
	}
	p.madeByInit()
	for _, name := range p.order {
		if tok, err := p.get(ctx, &Node{Name: name}); err != nil || tok != p.toks[name] {
			t.Fatalf("get %s: %q, %v", name, tok, err)
		}
	}
	if len(r.cmds) != 0 {
		t.Fatalf("commands after get: %q, want none (kubeadm init made the tokens)", r.cmds)
	}
	p.finish(ctx)
	if d := r.deletions(); len(d) != 1 || !strings.Contains(d[0], tokenSecret(p, "m2")) || !strings.Contains(d[0], tokenSecret(p, "w1")) {
		t.Fatalf("deletions: %q, want both tokens", d)
	}
}
