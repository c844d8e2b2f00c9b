package testhosts

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"strings"

	"golang.org/x/crypto/ssh"
)

// HostKey is one SSH host key of a host.
type HostKey struct {
	// File is the key's base name under /etc/ssh, e.g. "ssh_host_ed25519_key".
	File string
	// Type is the SSH key type, e.g. "ssh-ed25519", "ecdsa-sha2-nistp256".
	Type string
	// Label is how ssh-keygen -l names the type: "ED25519", "ECDSA".
	Label string
	// Bits is the key size as ssh-keygen -l prints it.
	Bits int
	// Fingerprint is the SHA256 fingerprint, "SHA256:...".
	Fingerprint string
	// AuthorizedKey is the public key as one line ("ssh-ed25519 AAAA... comment").
	AuthorizedKey string
	// PublicKey is the parsed public key.
	PublicKey ssh.PublicKey
	// PrivatePEM is the private key in OpenSSH format.
	PrivatePEM []byte
}

// GenerateHostKeys makes a fresh ed25519 and ecdsa (P-256) host key pair, as
// a new VM's first boot does. comment is usually "root@<hostname>".
func GenerateHostKeys(comment string) ([]HostKey, error) {
	_, edPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	ecPriv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	ed, err := newHostKey("ssh_host_ed25519_key", "ED25519", 256, edPriv, comment)
	if err != nil {
		return nil, err
	}
	ec, err := newHostKey("ssh_host_ecdsa_key", "ECDSA", 256, ecPriv, comment)
	if err != nil {
		return nil, err
	}
	return []HostKey{ed, ec}, nil
}

func newHostKey(file, label string, bits int, priv crypto.Signer, comment string) (HostKey, error) {
	pub, err := ssh.NewPublicKey(priv.Public())
	if err != nil {
		return HostKey{}, err
	}
	blk, err := ssh.MarshalPrivateKey(priv, comment)
	if err != nil {
		return HostKey{}, fmt.Errorf("marshal %s: %w", file, err)
	}
	line := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pub)))
	if comment != "" {
		line += " " + comment
	}
	return HostKey{
		File:          file,
		Type:          pub.Type(),
		Label:         label,
		Bits:          bits,
		Fingerprint:   ssh.FingerprintSHA256(pub),
		AuthorizedKey: line,
		PublicKey:     pub,
		PrivatePEM:    pem.EncodeToMemory(blk),
	}, nil
}

// FingerprintLines renders the keys the way cloud-init writes them to the
// console ("256 SHA256:... root@host (ED25519)").
func FingerprintLines(keys []HostKey, comment string) []string {
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, fmt.Sprintf("%d %s %s (%s)", k.Bits, k.Fingerprint, comment, k.Label))
	}
	return out
}

// Comment is the comment of the key's public line ("root@host").
func (k HostKey) Comment() string {
	f := strings.Fields(k.AuthorizedKey)
	if len(f) > 2 {
		return strings.Join(f[2:], " ")
	}
	return ""
}

// ParseHostKey rebuilds a HostKey from its private key in OpenSSH format
// (as saved from PrivatePEM).
func ParseHostKey(file, label string, bits int, privatePEM []byte, comment string) (HostKey, error) {
	raw, err := ssh.ParseRawPrivateKey(privatePEM)
	if err != nil {
		return HostKey{}, fmt.Errorf("host key %s: %w", file, err)
	}
	signer, ok := raw.(crypto.Signer)
	if !ok {
		if p, isPtr := raw.(*ed25519.PrivateKey); isPtr {
			signer = *p
		} else {
			return HostKey{}, fmt.Errorf("host key %s: unsupported type %T", file, raw)
		}
	}
	k, err := newHostKey(file, label, bits, signer, comment)
	if err != nil {
		return HostKey{}, err
	}
	k.PrivatePEM = privatePEM // the same bytes, not a re-encoding
	return k, nil
}
