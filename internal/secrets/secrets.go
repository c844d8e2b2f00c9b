// Package secrets seals secret values inside JSON documents (AES-256-GCM),
// masks them for output and scrubs them out of free text. It decides in one
// place which keys are secret, so the store, the API and the logs agree.
package secrets

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Mask replaces every secret value on output.
const Mask = "******"

// sealedPrefix marks a sealed value; the version lets keys or algorithms change later.
const sealedPrefix = "enc:v1:"

// secretWords are matched against a key lower-cased with '_' and '-' removed.
// The list is documented in README ("Secrets") and openapi/vnflcm.yaml.
var secretWords = []string{
	"password", "passwd", "passphrase", "secret", "token", "privatekey",
	"sshkey", "credential", "certkey", "apikey", "bearer", "clientpassword",
}

// IsSecretKey reports whether values under this JSON key are secret.
func IsSecretKey(key string) bool {
	k := strings.NewReplacer("_", "", "-", "").Replace(strings.ToLower(key))
	for _, w := range secretWords {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// Box seals and opens values with one AES-256-GCM key.
type Box struct{ aead cipher.AEAD }

// ErrKey reports a malformed key.
var ErrKey = errors.New("secret key must be 32 bytes, base64 encoded (generate one with: head -c32 /dev/urandom | base64)")

// NewBox builds a Box from a 32-byte key.
func NewBox(key []byte) (*Box, error) {
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
	return &Box{aead: aead}, nil
}

// ParseKey decodes a base64 key (standard or URL alphabet).
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil && len(b) == 32 {
			return b, nil
		}
	}
	return nil, ErrKey
}

// NewKey returns a fresh random key, base64 encoded.
func NewKey() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)
}

// Seal encrypts plaintext into a self-describing string.
func (b *Box) Seal(plain []byte) string {
	nonce := make([]byte, b.aead.NonceSize())
	_, _ = rand.Read(nonce)
	ct := b.aead.Seal(nonce, nonce, plain, nil)
	return sealedPrefix + base64.RawStdEncoding.EncodeToString(ct)
}

// IsSealed reports whether s came from Seal.
func IsSealed(s string) bool { return strings.HasPrefix(s, sealedPrefix) }

// Open decrypts a string produced by Seal.
func (b *Box) Open(s string) ([]byte, error) {
	if !IsSealed(s) {
		return nil, errors.New("secrets: value is not sealed")
	}
	raw, err := base64.RawStdEncoding.DecodeString(strings.TrimPrefix(s, sealedPrefix))
	if err != nil || len(raw) < b.aead.NonceSize() {
		return nil, errors.New("secrets: sealed value is corrupt")
	}
	n := b.aead.NonceSize()
	plain, err := b.aead.Open(nil, raw[:n], raw[n:], nil)
	if err != nil {
		return nil, errors.New("secrets: cannot decrypt sealed value (wrong VNFM_SECRET_KEY?)")
	}
	return plain, nil
}

// SealDoc returns a copy of a decoded JSON document (maps, slices, scalars)
// whose values under secret keys are sealed. The JSON encoding of the value is
// sealed, so OpenDoc restores numbers, objects and arrays as they were.
func (b *Box) SealDoc(v any) any {
	return walk(v, func(val any) any {
		if s, ok := val.(string); ok && IsSealed(s) {
			return s // already sealed: sealing is idempotent
		}
		raw, _ := json.Marshal(val)
		return b.Seal(raw)
	})
}

// OpenDoc reverses SealDoc.
func (b *Box) OpenDoc(v any) (any, error) {
	var firstErr error
	out := walk(v, func(val any) any {
		s, ok := val.(string)
		if !ok || !IsSealed(s) {
			return val
		}
		raw, err := b.Open(s)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			return Mask
		}
		var dec any
		if err := json.Unmarshal(raw, &dec); err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("secrets: sealed value is not JSON: %w", err)
			}
			return Mask
		}
		return dec
	})
	return out, firstErr
}

// MaskDoc returns a copy with every value under a secret key replaced by Mask.
func MaskDoc(v any) any {
	return walk(v, func(any) any { return Mask })
}

// walk copies v, replacing the value of every secret key with f(value).
func walk(v any, f func(any) any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, val := range t {
			if IsSecretKey(k) && val != nil {
				out[k] = f(val)
				continue
			}
			out[k] = walk(val, f)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, val := range t {
			out[i] = walk(val, f)
		}
		return out
	default:
		return v
	}
}

// SealJSON seals a raw JSON document. Invalid JSON is returned as an error, never stored.
func (b *Box) SealJSON(raw []byte) ([]byte, error) {
	return transformJSON(raw, func(v any) (any, error) { return b.SealDoc(v), nil })
}

// OpenJSON opens a raw JSON document sealed by SealJSON.
func (b *Box) OpenJSON(raw []byte) ([]byte, error) { return transformJSON(raw, b.OpenDoc) }

// MaskJSON masks a raw JSON document.
func MaskJSON(raw []byte) ([]byte, error) {
	return transformJSON(raw, func(v any) (any, error) { return MaskDoc(v), nil })
}

func transformJSON(raw []byte, f func(any) (any, error)) ([]byte, error) {
	if len(raw) == 0 {
		return raw, nil
	}
	var v any
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("secrets: %w", err)
	}
	out, err := f(v)
	if err != nil {
		return nil, err
	}
	return json.Marshal(out)
}

// Values collects the plaintext string values under secret keys of a decoded
// document, for Scrub. Short values are skipped: masking "a" everywhere would
// destroy messages without protecting anything.
func Values(v any) []string {
	var out []string
	var collect func(any, bool)
	collect = func(v any, secret bool) {
		switch t := v.(type) {
		case map[string]any:
			for k, val := range t {
				collect(val, secret || IsSecretKey(k))
			}
		case []any:
			for _, val := range t {
				collect(val, secret)
			}
		case string:
			if secret && len(t) >= 4 && !IsSealed(t) {
				out = append(out, t)
			}
		}
	}
	collect(v, false)
	return out
}

// Scrub replaces every occurrence of the given secret values in text with Mask.
func Scrub(text string, values []string) string {
	for _, s := range values {
		if s != "" {
			text = strings.ReplaceAll(text, s, Mask)
		}
	}
	return text
}
