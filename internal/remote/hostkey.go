package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"

	"golang.org/x/crypto/ssh"

	"github.com/mini-vnfm/mini-vnfm/internal/sshpin"
)

// Pin is a host key remembered for a server (the type the pin store
// shares without importing this package).
type Pin = sshpin.Pin

// PinKey names the pins of one server address: host keys are pinned per
// (server id, address), so a server reached on two addresses has two sets
// of pins, and a replacement server (new id) on an old address starts with
// none.
type PinKey struct {
	// ServerID is the cloud's id of the server (Nova server UUID).
	ServerID string
	// Address is the address the server is reached at; default Target.Host.
	Address string
}

// PinStore keeps pinned host keys (internal/store implements it on
// PostgreSQL, with the types of internal/sshpin). Implementations must be safe for concurrent use.
type PinStore interface {
	// Get returns the pins of a server address (none: first contact).
	Get(ctx context.Context, serverID, address string) ([]Pin, error)
	// Put pins a key if no key of its type is pinned yet, and refreshes
	// LastSeen if exactly this key is pinned. If a different key of the same
	// type is pinned it changes nothing and returns an error wrapping
	// ErrPinConflict.
	Put(ctx context.Context, serverID, address string, pin Pin) error
	// Replace drops the pins of a server address and pins the given keys
	// instead (none: the next contact pins afresh). Use it for a server
	// rebuilt with new host keys under the same id.
	Replace(ctx context.Context, serverID, address string, pins []Pin) error
}

// HostKeyPolicy decides how a server's host key is verified.
type HostKeyPolicy int

const (
	// HostKeyPin (the default) verifies against the pins: the first
	// contact pins the offered key (trust on first use), or, when the cloud
	// published fingerprints, the offered key must be one of them and is
	// then pinned; every later contact must offer the pinned key.
	HostKeyPin HostKeyPolicy = iota
	// HostKeyRequireKnown is HostKeyPin without trust on first use: with no
	// pin, the key must match a published fingerprint.
	HostKeyRequireKnown
	// HostKeyRepin ignores the existing pins for this one connection and
	// replaces them with the key offered now (checked against the published
	// fingerprints when there are any). For a server known to have new
	// keys: rebuilt, or healed under the same id.
	HostKeyRepin
	// InsecureIgnoreHostKey accepts any host key and pins nothing. UNSAFE:
	// anyone who can intercept the connection sees the password and
	// controls what the commands do. Only for explicit opt-in (lab setups,
	// tests); never the default.
	InsecureIgnoreHostKey
)

func (p HostKeyPolicy) String() string {
	switch p {
	case HostKeyPin:
		return "pin"
	case HostKeyRequireKnown:
		return "require-known"
	case HostKeyRepin:
		return "repin"
	case InsecureIgnoreHostKey:
		return "insecure-ignore"
	}
	return fmt.Sprintf("HostKeyPolicy(%d)", int(p))
}

// ErrHostKeyUnknown is returned (wrapped) under HostKeyRequireKnown when the
// server has no pin and no fingerprint was published.
var ErrHostKeyUnknown = errors.New("host key unknown: nothing pinned and no fingerprint published")

// firstContactAlgos is the host key algorithm preference before anything is
// pinned: ed25519 first (x/crypto's own default prefers ECDSA).
var firstContactAlgos = []string{
	ssh.KeyAlgoED25519,
	ssh.KeyAlgoECDSA256, ssh.KeyAlgoECDSA384, ssh.KeyAlgoECDSA521,
	ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256,
}

// algosForKeyType lists the host key (signature) algorithms that make a
// server present a key of this type.
func algosForKeyType(t string) []string {
	switch t {
	case ssh.KeyAlgoRSA:
		return []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA}
	case ssh.KeyAlgoED25519, ssh.KeyAlgoECDSA256, ssh.KeyAlgoECDSA384, ssh.KeyAlgoECDSA521:
		return []string{t}
	}
	return nil
}

// PinOf makes the Pin of a public key.
func PinOf(key ssh.PublicKey) Pin { return sshpin.Of(key) }

// normFingerprint brings a published fingerprint to the form compared:
// "SHA256:<base64 without padding>" or "MD5:<lower-case hex pairs>".
func normFingerprint(s string) string {
	s = strings.TrimSpace(s)
	switch {
	case strings.HasPrefix(s, "SHA256:"):
		return strings.TrimRight(s, "=")
	case strings.HasPrefix(strings.ToUpper(s), "MD5:"):
		return "MD5:" + strings.ToLower(s[4:])
	case isMD5Hex(s):
		return "MD5:" + strings.ToLower(s)
	}
	return s
}

func isMD5Hex(s string) bool {
	if len(s) != 47 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if i%3 == 2 {
			if c != ':' {
				return false
			}
		} else if !strings.ContainsRune("0123456789abcdefABCDEF", rune(c)) {
			return false
		}
	}
	return true
}

func matchesPublished(key ssh.PublicKey, published []string) bool {
	sha := ssh.FingerprintSHA256(key)
	md5 := "MD5:" + ssh.FingerprintLegacyMD5(key)
	for _, p := range published {
		if n := normFingerprint(p); n == sha || n == md5 {
			return true
		}
	}
	return false
}

// FingerprintsFromConsole extracts the host key fingerprints a server
// published on its console (cloud-init prints them between
// "-----BEGIN SSH HOST KEY FINGERPRINTS-----" and "-----END SSH HOST KEY
// FINGERPRINTS-----", and the keys themselves in a "SSH HOST KEY KEYS"
// block). Only the last block of each kind counts (the latest boot). The
// result is suitable for Target.PublishedFingerprints; nil when the log has
// none.
func FingerprintsFromConsole(log string) []string {
	var out []string
	add := func(f string) {
		if f != "" && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	for _, line := range lastBlock(log, "SSH HOST KEY FINGERPRINTS") {
		for _, tok := range strings.Fields(line) {
			if strings.HasPrefix(tok, "SHA256:") || strings.HasPrefix(strings.ToUpper(tok), "MD5:") || isMD5Hex(tok) {
				add(normFingerprint(tok))
				break
			}
		}
	}
	for _, line := range lastBlock(log, "SSH HOST KEY KEYS") {
		// Lines may carry a prefix ("ec2: ssh-ed25519 AAAA... root@h").
		fields := strings.Fields(line)
		for i := range fields {
			if key, _, _, _, err := ssh.ParseAuthorizedKey([]byte(strings.Join(fields[i:], " "))); err == nil {
				add(ssh.FingerprintSHA256(key))
				break
			}
		}
	}
	return out
}

// lastBlock returns the lines between the last "-----BEGIN <name>-----" and
// the "-----END <name>-----" after it.
func lastBlock(log, name string) []string {
	begin, end := "-----BEGIN "+name+"-----", "-----END "+name+"-----"
	i := strings.LastIndex(log, begin)
	if i < 0 {
		return nil
	}
	rest := log[i+len(begin):]
	j := strings.Index(rest, end)
	if j < 0 {
		return nil
	}
	return strings.Split(rest[:j], "\n")
}

// hostKeyCheck verifies the host key of one connection attempt. prepare
// loads the pins before the handshake (to choose HostKeyAlgorithms),
// callback runs inside the handshake, commit pins after authentication.
type hostKeyCheck struct {
	t    *Target
	host string // "host:port", for errors
	key  PinKey

	mu      sync.Mutex
	pins    []Pin
	offered ssh.PublicKey
	// published: algorithms that make the server present a key among the
	// published fingerprints; set once (see publishedAlgos).
	published []string
	searched  bool
}

func (h *hostKeyCheck) preferAlgos(algos []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.published, h.searched = algos, true
}

// triedPublished reports (and records) whether the other keys of the server
// were already searched for a published one.
func (h *hostKeyCheck) triedPublished() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	tried := h.searched
	h.searched = true
	return tried
}

func newHostKeyCheck(t *Target, host string) *hostKeyCheck {
	k := t.PinKey
	if k.Address == "" {
		k.Address = t.Host
	}
	return &hostKeyCheck{t: t, host: host, key: k}
}

// validate reports a configuration that cannot verify anything.
func (h *hostKeyCheck) validate() error {
	switch h.t.HostKeyPolicy {
	case InsecureIgnoreHostKey:
		return nil
	case HostKeyPin, HostKeyRequireKnown, HostKeyRepin:
	default:
		return fmt.Errorf("remote: unknown HostKeyPolicy %d", int(h.t.HostKeyPolicy))
	}
	if h.t.Pins == nil {
		if h.t.HostKeyPolicy == HostKeyRepin {
			return errors.New("remote: HostKeyPolicy Repin needs a PinStore (Target.Pins)")
		}
		if len(h.t.PublishedFingerprints) == 0 {
			return errors.New("remote: no way to verify the host key: set Target.Pins (and PinKey) or " +
				"Target.PublishedFingerprints, or ask explicitly for HostKeyPolicy InsecureIgnoreHostKey")
		}
		return nil
	}
	if h.key.ServerID == "" {
		return errors.New("remote: Target.PinKey.ServerID is required with a PinStore (host keys are pinned per server id and address)")
	}
	return nil
}

// prepare loads the pins and returns the host key algorithms to offer.
func (h *hostKeyCheck) prepare(ctx context.Context) ([]string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.offered, h.pins = nil, nil
	first := firstContactAlgos
	if h.published != nil {
		first = h.published
	}
	if h.t.HostKeyPolicy == InsecureIgnoreHostKey || h.t.HostKeyPolicy == HostKeyRepin || h.t.Pins == nil {
		return slices.Clone(first), nil
	}
	pins, err := h.t.Pins.Get(ctx, h.key.ServerID, h.key.Address)
	if err != nil {
		return nil, fmt.Errorf("remote: reading the host key pins of %s: %w", h.host, err)
	}
	h.pins = pins
	if len(pins) == 0 {
		return slices.Clone(first), nil
	}
	// golang/go#29286: x/crypto picks the host key algorithm by its own
	// preference, so a server with several keys might present a type other
	// than the pinned one. Offer only the pinned types.
	var algos []string
	for _, p := range pins {
		for _, a := range algosForKeyType(p.KeyType) {
			if !slices.Contains(algos, a) {
				algos = append(algos, a)
			}
		}
	}
	if len(algos) == 0 {
		return nil, fmt.Errorf("remote: %s: the pinned host key types %v are not supported", h.host, pinTypes(pins))
	}
	return algos, nil
}

func pinTypes(pins []Pin) []string {
	var out []string
	for _, p := range pins {
		out = append(out, p.KeyType)
	}
	return out
}

func pinFingerprints(pins []Pin) []string {
	var out []string
	for _, p := range pins {
		out = append(out, p.Fingerprint)
	}
	return out
}

// callback is the ssh.HostKeyCallback.
func (h *hostKeyCheck) callback(_ string, _ net.Addr, key ssh.PublicKey) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.offered = key
	if h.t.HostKeyPolicy == InsecureIgnoreHostKey {
		return nil
	}
	if len(h.pins) > 0 {
		return h.checkPins(key, h.pins)
	}
	if len(h.t.PublishedFingerprints) > 0 {
		if !matchesPublished(key, h.t.PublishedFingerprints) {
			return h.mismatch(key, h.t.PublishedFingerprints, "published")
		}
		return nil
	}
	if h.t.HostKeyPolicy == HostKeyRequireKnown {
		return fmt.Errorf("remote: %s offered %s %s: %w (HostKeyPolicy RequireKnown)", h.host, key.Type(),
			ssh.FingerprintSHA256(key), ErrHostKeyUnknown)
	}
	return nil // first contact: pinned in commit, after authentication
}

func (h *hostKeyCheck) checkPins(key ssh.PublicKey, pins []Pin) error {
	fp := ssh.FingerprintSHA256(key)
	for _, p := range pins {
		if p.KeyType == key.Type() && p.Fingerprint == fp && (len(p.Key) == 0 || bytes.Equal(p.Key, key.Marshal())) {
			return nil
		}
	}
	return h.mismatch(key, pinFingerprints(pins), "pinned")
}

func (h *hostKeyCheck) mismatch(key ssh.PublicKey, want []string, source string) *HostKeyMismatchError {
	e := &HostKeyMismatchError{Host: h.host, ServerID: h.key.ServerID, Address: h.key.Address, Want: slices.Clone(want), Source: source}
	if key != nil {
		e.KeyType, e.Got = key.Type(), ssh.FingerprintSHA256(key)
	}
	return e
}

// commit records the verified key after a successful login.
func (h *hostKeyCheck) commit(ctx context.Context) error {
	h.mu.Lock()
	key, pins := h.offered, h.pins
	h.mu.Unlock()
	if h.t.HostKeyPolicy == InsecureIgnoreHostKey || h.t.Pins == nil || key == nil {
		return nil
	}
	pin := PinOf(key)
	if h.t.HostKeyPolicy == HostKeyRepin {
		if err := h.t.Pins.Replace(ctx, h.key.ServerID, h.key.Address, []Pin{pin}); err != nil {
			return fmt.Errorf("remote: re-pinning the host key of %s: %w", h.host, err)
		}
		return nil
	}
	err := h.t.Pins.Put(ctx, h.key.ServerID, h.key.Address, pin)
	if errors.Is(err, ErrPinConflict) {
		// Another connection pinned a different key meanwhile.
		now, gerr := h.t.Pins.Get(ctx, h.key.ServerID, h.key.Address)
		if gerr == nil && len(now) > 0 {
			return h.mismatch(key, pinFingerprints(now), "pinned")
		}
		return h.mismatch(key, pinFingerprints(pins), "pinned")
	}
	if err != nil {
		return fmt.Errorf("remote: pinning the host key of %s: %w", h.host, err)
	}
	return nil
}

// offeredKey is the key the server presented in the last attempt.
func (h *hostKeyCheck) offeredKey() ssh.PublicKey {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.offered
}
