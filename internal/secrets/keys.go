package secrets

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
)

// Key rotation. A Box holds the current key, which seals every new value,
// and any number of old keys, which only open. Each key has an id derived
// from the key itself (KeyID), written into every sealed value, so a value
// always names the key it needs. To rotate: make the new key current, list
// the previous one as old, re-seal what is stored (Reseal, ResealDoc), then
// drop the old key once nothing names it any more.

// Box seals with its current AES-256-GCM key and opens with any of its keys.
type Box struct {
	cur  *boxKey
	old  []*boxKey
	byID map[string]*boxKey
}

type boxKey struct {
	id   string
	aead cipher.AEAD
}

func newBoxKey(key []byte) (*boxKey, error) {
	if len(key) != 32 {
		return nil, ErrKey
	}
	blk, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("secrets: %w", err)
	}
	aead, err := cipher.NewGCM(blk)
	if err != nil {
		return nil, fmt.Errorf("secrets: %w", err)
	}
	return &boxKey{id: KeyID(key), aead: aead}, nil
}

// KeyID names a key: the first 8 bytes of a SHA-256 over a fixed label and
// the key, hex encoded. It identifies the key without revealing anything
// useful about it, and needs no configuration.
func KeyID(key []byte) string {
	h := sha256.New()
	h.Write([]byte("mini-vnfm secrets key id\x00"))
	h.Write(key)
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// KeyID is the id of the current key, the one Seal uses.
func (b *Box) KeyID() string { return b.cur.id }

// KeyIDs lists the ids of all keys the box opens with, the current one first.
func (b *Box) KeyIDs() []string {
	out := []string{b.cur.id}
	for _, k := range b.old {
		out = append(out, k.id)
	}
	return out
}

// SealedKeyID returns the id of the key named by a sealed value, or "" for
// values of the v1 format (no id: sealed before key ids existed) and for
// values that are not sealed.
func SealedKeyID(s string) string {
	for _, prefix := range []string{sealedPrefixV3, sealedPrefixV2} {
		if rest, ok := strings.CutPrefix(s, prefix); ok {
			id, _, ok := strings.Cut(rest, ":")
			if !ok {
				return ""
			}
			return id
		}
	}
	return ""
}

// Current reports whether s is sealed in the current format (v3, bound to
// its place) with the current key.
func (b *Box) Current(s string) bool {
	return strings.HasPrefix(s, sealedPrefixV3) && SealedKeyID(s) == b.cur.id
}

// Reseal re-encrypts a sealed value stored at p with the current key in the
// current format. It returns the value unchanged (and false) when it
// already is current or is not sealed at all.
func (b *Box) Reseal(s string, p Place) (string, bool, error) {
	if !IsSealed(s) || b.Current(s) {
		return s, false, nil
	}
	plain, err := b.OpenAt(s, p)
	if err != nil {
		return s, false, err
	}
	return b.SealAt(plain, p), true, nil
}

// ResealDoc re-seals every sealed string anywhere in a decoded JSON
// document stored at p (each at its own path) with the current key, and
// reports whether anything changed.
func (b *Box) ResealDoc(v any, p Place) (any, bool, error) {
	changed := false
	var firstErr error
	var rec func(any, *trail) any
	rec = func(v any, t *trail) any {
		switch m := v.(type) {
		case map[string]any:
			out := make(map[string]any, len(m))
			for k, val := range m {
				out[k] = rec(val, &trail{up: t, key: k})
			}
			return out
		case []any:
			out := make([]any, len(m))
			next := &trail{up: t, elem: true}
			for i, val := range m {
				out[i] = rec(val, next)
			}
			return out
		case string:
			if !IsSealed(m) || b.Current(m) {
				return m // nothing to do: no place needed
			}
			s, ch, err := b.Reseal(m, t.at(p))
			if err != nil && firstErr == nil {
				firstErr = err
			}
			changed = changed || ch
			return s
		}
		return v
	}
	out := rec(v, nil)
	return out, changed, firstErr
}

// ResealJSON is ResealDoc for a raw JSON document stored at p.
func (b *Box) ResealJSON(raw []byte, p Place) ([]byte, bool, error) {
	changed := false
	out, err := transformJSON(raw, func(v any) (any, error) {
		out, ch, err := b.ResealDoc(v, p)
		changed = ch
		return out, err
	})
	if err != nil || !changed {
		return raw, false, err
	}
	return out, true, nil
}

// SealValue seals the JSON encoding of any value stored at p (OpenValue
// reverses it). Callers that decide themselves which values are secret use
// it instead of SealDoc, which goes by key names.
func (b *Box) SealValue(v any, p Place) (string, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("secrets: %w", err)
	}
	return b.SealAt(raw, p), nil
}

// OpenValue opens a value sealed by SealValue (or SealDoc) at p.
func (b *Box) OpenValue(s string, p Place) (any, error) {
	raw, err := b.OpenAt(s, p)
	if err != nil {
		return nil, err
	}
	v, err := decodeNumbers(raw)
	if err != nil {
		return nil, fmt.Errorf("secrets: sealed value is not JSON: %w", err)
	}
	return v, nil
}

// ParseKeys decodes a list of base64 keys separated by commas, white space or
// new lines; lines starting with # are comments. It is the format of
// VNFM_SECRET_KEYS_OLD and of the lines of a key file.
func ParseKeys(s string) ([][]byte, error) {
	var out [][]byte
	for _, line := range strings.Split(s, "\n") {
		if t := strings.TrimSpace(line); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		for _, f := range strings.FieldsFunc(line, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\r' }) {
			k, err := ParseKey(f)
			if err != nil {
				return nil, fmt.Errorf("key %d: %w", len(out)+1, err)
			}
			out = append(out, k)
		}
	}
	return out, nil
}
