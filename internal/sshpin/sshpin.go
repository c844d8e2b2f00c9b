// Package sshpin is the vocabulary of SSH host key pinning that the SSH
// client (internal/remote, whose PinStore interface uses it) and the pin
// store (internal/store, which implements that interface on PostgreSQL)
// share, so that neither imports the other.
package sshpin

import (
	"errors"
	"time"

	"golang.org/x/crypto/ssh"
)

// Pin is a host key remembered for a server.
type Pin struct {
	// KeyType is the key's type as SSH names it ("ssh-ed25519",
	// "ecdsa-sha2-nistp256", "ssh-rsa").
	KeyType string
	// Fingerprint is the SHA256 fingerprint ("SHA256:...", as ssh-keygen -l
	// prints it).
	Fingerprint string
	// Key is the public key in SSH wire format (ssh.PublicKey.Marshal).
	Key []byte
	// FirstSeen and LastSeen are kept by the store.
	FirstSeen, LastSeen time.Time
}

// Of makes the Pin of a public key.
func Of(key ssh.PublicKey) Pin {
	return Pin{KeyType: key.Type(), Fingerprint: ssh.FingerprintSHA256(key), Key: key.Marshal()}
}

// ErrConflict is returned (wrapped) by a pin store's Put when a different
// key of the same type is already pinned for that server and address.
var ErrConflict = errors.New("a different host key is already pinned")
