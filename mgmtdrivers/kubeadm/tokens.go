package kubeadm

import (
	"context"
	"crypto/rand"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/remote"
)

// Bootstrap tokens: every join gets a token of its own, deleted after it.
// They are made in one round trip for all the joins of a hook (a
// `kubeadm token create` per join was a process each on the first master,
// beside the control-plane joins there) as the bootstrap token Secrets
// kubeadm itself writes (kube-system/bootstrap-token-<id>, type
// bootstrap.kubernetes.io/token, authentication and signing usages, the
// group of kubeadm's default node token), and deleted in one round trip.

const (
	tokenIDChars   = "abcdefghijklmnopqrstuvwxyz0123456789"
	bootstrapGroup = "system:bootstrappers:kubeadm:default-node-token"
	expiryMark     = "__MINI_VNFM_EXPIRY__"
)

// bootstrappedLine starts the install script's progress line saying that a
// join's kubelet has done its TLS bootstrap: the join's token (and the
// uploaded control-plane certificates) are not needed any more.
const bootstrappedLine = "kubelet bootstrapped"

// newToken returns a random bootstrap token ([a-z0-9]{6}.[a-z0-9]{16}).
func newToken() string {
	b := make([]byte, 22)
	buf := make([]byte, 1)
	for i := range b {
		for {
			_, _ = rand.Read(buf)
			// 252 = 7 × 36: no modulo bias.
			if buf[0] < 252 {
				b[i] = tokenIDChars[int(buf[0])%len(tokenIDChars)]
				break
			}
		}
	}
	return string(b[:6]) + "." + string(b[6:])
}

// tokenSecrets renders the bootstrap token Secrets; the expiry is left as
// expiryMark for the master to fill in with its own clock.
func tokenSecrets(toks map[string]string, order []string, desc map[string]string) string {
	var b strings.Builder
	for _, name := range order {
		id, secret, _ := strings.Cut(toks[name], ".")
		fmt.Fprintf(&b, `apiVersion: v1
kind: Secret
type: bootstrap.kubernetes.io/token
metadata:
  name: bootstrap-token-%s
  namespace: kube-system
stringData:
  description: %s
  token-id: %s
  token-secret: %s
  expiration: %s
  usage-bootstrap-authentication: "true"
  usage-bootstrap-signing: "true"
  auth-extra-groups: %s
---
`, id, strconv.Quote(desc[name]), id, secret, expiryMark, bootstrapGroup)
	}
	return b.String()
}

// mintTokensScript creates the Secrets of stdin with the expiry now + $1
// seconds by the master's clock (the API server's). kubectl create, not
// apply (no read per object), without client-side validation (no OpenAPI
// download). Tokens a failed attempt created already are fine.
const mintTokensScript = `set -eu
exp=$(date -u -d "@$(( $(date +%s) + $1 ))" +%Y-%m-%dT%H:%M:%SZ)
if err=$(sed "s/` + expiryMark + `/$exp/" | kubectl --kubeconfig ` + adminConf + ` create --validate=false -f - 2>&1 >/dev/null); then
	exit 0
fi
if printf '%s\n' "$err" | grep -q -v AlreadyExists; then
	printf '%s\n' "$err" >&2
	exit 1
fi`

// tokenPool hands out one bootstrap token per joining node. The tokens
// are generated at once (their ids are known before they exist, so a
// clean-up can spare them) and created on the first get, all together.
// Each is deleted as soon as its join no longer needs it: the tokens that
// became unused while a deletion ran go together in the next, so the
// deletion after the last join, on the critical path's tail, carries only
// what that join held (its token and the uploaded certificates), not every
// join's.
type tokenPool struct {
	d     *Driver
	ms    *session
	ttl   time.Duration
	order []string          // node names
	toks  map[string]string // by node name
	desc  map[string]string
	// run runs a command on the master ms (ms.x.Run; tests record).
	run func(ctx context.Context, cmd string, o remote.RunOpts) (remote.Result, error)

	mu       sync.Mutex
	created  bool
	finished bool            // finish ran: nothing is deleted any more
	unused   map[string]bool // node names whose join needs its token no more
	deleted  map[string]bool // node names whose token was deleted (or tried)
	deleting bool            // a deletion runs (it takes what became unused meanwhile)
	certs    bool            // the uploaded control-plane certificates go with the next deletion
	// certOwners are the Secrets owning kubeadm-certs when known (the
	// clean-up after the init read them), so that drop need not look.
	certOwners []string
	bg         *sync.WaitGroup
}

// newTokenPool generates the tokens of nodes' joins (created on ms, the
// first get).
func (h *hook) newTokenPool(ms *session, nodes []*Node) *tokenPool {
	p := &tokenPool{d: h.d, ms: ms, ttl: h.p.JoinTokenTTL, toks: map[string]string{}, desc: map[string]string{},
		unused: map[string]bool{}, deleted: map[string]bool{}, bg: &sync.WaitGroup{}, run: ms.x.Run}
	for _, n := range nodes {
		p.order = append(p.order, n.Name)
		p.toks[n.Name] = newToken()
		what := "join"
		if n.Role == Master {
			what = "control-plane join"
		}
		p.desc[n.Name] = "mini-VNFM " + what + " of " + n.Name + " (op " + h.op.ID + ")"
		ms.x.AddSecrets(p.toks[n.Name])
	}
	return p
}

// prefetch creates the tokens in the background now, so that the first
// join finds them made (a failure is tried again by get).
func (p *tokenPool) prefetch(ctx context.Context) {
	if len(p.order) == 0 {
		return
	}
	first := &Node{Name: p.order[0]}
	p.bg.Go(func() { _, _ = p.get(ctx, first) })
}

// initLines are the pool's tokens for the install script's
// --bootstrap-tokens-stdin: "<token> <description>", one a line.
func (p *tokenPool) initLines() string {
	var b strings.Builder
	for _, name := range p.order {
		fmt.Fprintf(&b, "%s %s\n", p.toks[name], strings.ReplaceAll(p.desc[name], "\n", " "))
	}
	return b.String()
}

// madeByInit records that kubeadm init created the pool's tokens (the
// install script's --bootstrap-tokens-stdin): get makes none.
func (p *tokenPool) madeByInit() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.created = true
}

// ids are the pool's token ids.
func (p *tokenPool) ids() []string {
	var out []string
	for _, name := range p.order {
		id, _, _ := strings.Cut(p.toks[name], ".")
		out = append(out, id)
	}
	return out
}

// get returns n's token, creating all the pool's tokens first if they do
// not exist yet.
func (p *tokenPool) get(ctx context.Context, n *Node) (string, error) {
	tok, ok := p.toks[n.Name]
	if !ok {
		return "", fmt.Errorf("no bootstrap token was planned for %s", n.Name)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.created {
		cmd := remote.Command("sh", "-c", mintTokensScript, "mint-tokens", strconv.Itoa(int(p.ttl.Seconds())))
		if _, err := p.run(ctx, cmd, p.d.sudo(remote.RunOpts{Stdin: strings.NewReader(tokenSecrets(p.toks, p.order, p.desc))})); err != nil {
			return "", fmt.Errorf("creating %d bootstrap tokens on %s: %w", len(p.order), p.ms.node.Name, err)
		}
		p.created = true
	}
	return tok, nil
}

// used says that n's join no longer needs its token (its kubeadm join
// ended, or it will not run): the token is deleted in the background, with
// the others that became unused meanwhile (finish waits for that).
func (p *tokenPool) used(ctx context.Context, n *Node) {
	if _, ok := p.toks[n.Name]; !ok {
		return
	}
	p.mu.Lock()
	p.unused[n.Name] = true
	p.mu.Unlock()
	p.kick(ctx)
}

// kick starts a deletion of what is unused and not deleted yet, unless one
// runs (it looks again when it ends).
func (p *tokenPool) kick(ctx context.Context) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.deleting || p.finished {
		return
	}
	p.deleting = true
	ctx = context.WithoutCancel(ctx)
	p.bg.Go(func() {
		for p.dropSome(ctx) {
		}
	})
}

// finish deletes what is left (joins skipped as done in an earlier run
// never say used) and waits for every deletion.
func (p *tokenPool) finish(ctx context.Context) {
	if p == nil {
		return
	}
	p.mu.Lock()
	for _, name := range p.order {
		p.unused[name] = true
	}
	p.mu.Unlock()
	p.kick(ctx)
	p.bg.Wait()
	p.mu.Lock()
	p.finished = true
	p.mu.Unlock()
}

// alsoDropCerts makes the next deletion delete the uploaded control-plane
// certificates too (one round trip for both clean-ups), with the token of
// n (nil: none) — the last control-plane join's, in the same round trip —
// and starts it; false when the pool is finished.
func (p *tokenPool) alsoDropCerts(ctx context.Context, n *Node) bool {
	p.mu.Lock()
	if p.finished {
		p.mu.Unlock()
		return false
	}
	p.certs = true
	if _, ok := p.toks[nodeName(n)]; ok {
		p.unused[n.Name] = true
	}
	p.mu.Unlock()
	p.kick(ctx)
	return true
}

// dropScript deletes the Secrets named by the arguments (the tokens) and,
// with $1 = 1, the uploaded control-plane certificates with the token
// kubeadm made to own them. --wait=false: Secrets have no finalizers, and
// kubectl's wait for each to be gone is another request per Secret.
const dropScript = `set -eu
kc="kubectl --kubeconfig ` + adminConf + ` -n kube-system"
certs=$1
shift
if [ "$certs" = 1 ]; then
	set -- "$@" kubeadm-certs $($kc get secret kubeadm-certs --ignore-not-found -o 'jsonpath={.metadata.ownerReferences[*].name}')
fi
[ $# -eq 0 ] || $kc delete secret --ignore-not-found --wait=false "$@" >/dev/null`

// dropSome deletes, in one round trip, the tokens whose joins no longer
// need them and that are not deleted yet, with the certificates when asked
// (best effort: they expire anyway). It reports whether it deleted
// anything (then there may be more); when not, the deletion has ended.
func (p *tokenPool) dropSome(ctx context.Context) bool {
	p.mu.Lock()
	var names, ids []string
	look := "0"
	if p.certs {
		p.certs = false
		if p.certOwners != nil {
			names = append([]string{"kubeadm-certs"}, p.certOwners...)
		} else {
			look = "1"
		}
	}
	if p.created {
		for _, name := range p.order {
			if p.unused[name] && !p.deleted[name] {
				p.deleted[name] = true
				id, _, _ := strings.Cut(p.toks[name], ".")
				ids = append(ids, id)
				names = append(names, "bootstrap-token-"+id)
			}
		}
	}
	if len(names) == 0 && look == "0" {
		p.deleting = false
		p.mu.Unlock()
		return false
	}
	p.mu.Unlock()
	args := append([]string{"-c", dropScript, "drop-tokens", look}, names...)
	if _, err := p.run(ctx, remote.Command("sh", args...), p.d.sudo(remote.RunOpts{})); err != nil {
		p.ms.log.Warn("could not delete used bootstrap tokens (or the uploaded certificates); they expire on their own", "tokenIds", strings.Join(ids, ","), "err", err)
	}
	return true
}

// deleteOtherTokensScript deletes every bootstrap token but those whose ids
// are the arguments and the one the uploaded control-plane certificates
// belong to (kubeadm-certs is owned by a token without usages that kubeadm
// made for its 2 h lifetime: deleting it deletes the certificates), in one
// session: the tokens never leave the node.
const deleteOtherTokensScript = `set -eu
kc="kubectl --kubeconfig ` + adminConf + ` -n kube-system"
owners=$($kc get secret kubeadm-certs --ignore-not-found -o 'jsonpath={.metadata.ownerReferences[*].name}')
del=""
for s in $($kc get secrets --field-selector type=bootstrap.kubernetes.io/token -o name); do
	keep=0
	for id in "$@"; do
		if [ "$s" = "secret/bootstrap-token-$id" ]; then keep=1; fi
	done
	for o in $owners; do
		if [ "$s" = "secret/$o" ]; then keep=1; fi
	done
	if [ $keep = 0 ]; then del="$del $s"; fi
done
if [ -n "$del" ]; then $kc delete --ignore-not-found --wait=false $del >/dev/null; fi
echo "` + certOwnersMark + ` $owners"`

// certOwnersMark heads deleteOtherTokensScript's line naming kubeadm-certs'
// owners.
const certOwnersMark = "VNFM_CERT_OWNERS"

// setCertOwners records the Secrets owning kubeadm-certs (Secret names);
// nil: not known (drop looks).
func (p *tokenPool) setCertOwners(owners []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.certOwners = owners
}

// deleteOtherTokens removes every bootstrap token but keep's (right after
// kubeadm init: its default 24 h token and the install script's), best
// effort.
// It returns the Secrets owning kubeadm-certs (nil when it failed).
func (d *Driver) deleteOtherTokens(ctx context.Context, m *session, keep []string) []string {
	cmd := remote.Command("sh", append([]string{"-c", deleteOtherTokensScript, "delete-tokens"}, keep...)...)
	res, err := m.x.Run(ctx, cmd, d.sudo(remote.RunOpts{}))
	if err != nil {
		m.log.Warn("could not delete the bootstrap tokens kubeadm init made; they expire on their own", "err", err)
		return nil
	}
	for _, l := range strings.Split(res.Stdout, "\n") {
		if rest, ok := strings.CutPrefix(l, certOwnersMark); ok {
			return append([]string{}, strings.Fields(rest)...)
		}
	}
	return nil
}

func nodeName(n *Node) string {
	if n == nil {
		return ""
	}
	return n.Name
}
