// Package secrets seals secret values inside JSON documents (AES-256-GCM),
// masks them for output and scrubs them out of free text. It decides in one
// place which keys are secret, so the store, the API and the logs agree.
package secrets

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Mask replaces every secret value on output.
const Mask = "******"

// Sealed value formats. v2 names the key that sealed the value
// ("enc:v2:<keyid>:<base64(nonce|ciphertext)>", the header is the GCM
// additional data); v1 ("enc:v1:<base64>") predates key ids and is opened by
// trying the current key, then the old ones. Seal always writes v2.
const (
	sealedPrefixV1 = "enc:v1:"
	sealedPrefixV2 = "enc:v2:"
)

// secretWords are matched against a key lower-cased with '_' and '-' removed.
// The list is documented in README ("Secrets") and openapi/vnflcm.yaml.
var secretWords = []string{
	"password", "passwd", "passphrase", "secret", "token", "privatekey",
	"sshkey", "credential", "certkey", "apikey", "bearer", "clientpassword",
}

// keyNormalizer is built once: IsSecretKey runs for every key of every document rendered.
var keyNormalizer = strings.NewReplacer("_", "", "-", "")

// IsSecretKey reports whether values under this JSON key are secret.
func IsSecretKey(key string) bool {
	k := keyNormalizer.Replace(strings.ToLower(key))
	for _, w := range secretWords {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// ErrKey reports a malformed key.
var ErrKey = errors.New("secret key must be 32 bytes, base64 encoded (generate one with: head -c32 /dev/urandom | base64)")

// NewBox builds a Box that seals with key and also opens values sealed with
// any of the old keys (key rotation: keys.go).
func NewBox(key []byte, old ...[]byte) (*Box, error) {
	cur, err := newBoxKey(key)
	if err != nil {
		return nil, err
	}
	b := &Box{cur: cur, byID: map[string]*boxKey{cur.id: cur}}
	for _, k := range old {
		ok, err := newBoxKey(k)
		if err != nil {
			return nil, fmt.Errorf("old key: %w", err)
		}
		if _, dup := b.byID[ok.id]; dup {
			continue
		}
		b.byID[ok.id] = ok
		b.old = append(b.old, ok)
	}
	return b, nil
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

// Seal encrypts plaintext with the current key into a self-describing string
// that names the key.
func (b *Box) Seal(plain []byte) string {
	k := b.cur
	header := sealedPrefixV2 + k.id + ":"
	nonce := make([]byte, k.aead.NonceSize())
	_, _ = rand.Read(nonce)
	ct := k.aead.Seal(nonce, nonce, plain, []byte(header))
	return header + base64.RawStdEncoding.EncodeToString(ct)
}

// IsSealed reports whether s came from Seal (either format).
func IsSealed(s string) bool {
	return strings.HasPrefix(s, sealedPrefixV2) || strings.HasPrefix(s, sealedPrefixV1)
}

// Open decrypts a string produced by Seal, with whichever configured key sealed it.
func (b *Box) Open(s string) ([]byte, error) {
	switch {
	case strings.HasPrefix(s, sealedPrefixV2):
		id, payload, ok := strings.Cut(strings.TrimPrefix(s, sealedPrefixV2), ":")
		if !ok {
			return nil, errors.New("secrets: sealed value is corrupt")
		}
		k, known := b.byID[id]
		if !known {
			return nil, fmt.Errorf("secrets: value was sealed with key %s, which is not configured (give that key in VNFM_SECRET_KEYS_OLD)", id)
		}
		raw, err := base64.RawStdEncoding.DecodeString(payload)
		if err != nil || len(raw) < k.aead.NonceSize() {
			return nil, errors.New("secrets: sealed value is corrupt")
		}
		n := k.aead.NonceSize()
		plain, err := k.aead.Open(nil, raw[:n], raw[n:], []byte(sealedPrefixV2+id+":"))
		if err != nil {
			return nil, fmt.Errorf("secrets: cannot decrypt sealed value with key %s (corrupt value?)", id)
		}
		return plain, nil
	case strings.HasPrefix(s, sealedPrefixV1):
		raw, err := base64.RawStdEncoding.DecodeString(strings.TrimPrefix(s, sealedPrefixV1))
		if err != nil || len(raw) < b.cur.aead.NonceSize() {
			return nil, errors.New("secrets: sealed value is corrupt")
		}
		n := b.cur.aead.NonceSize()
		// v1 values carry no key id: GCM authentication tells which key fits.
		for _, k := range append([]*boxKey{b.cur}, b.old...) {
			if plain, err := k.aead.Open(nil, raw[:n], raw[n:], nil); err == nil {
				return plain, nil
			}
		}
		return nil, errors.New("secrets: cannot decrypt sealed value (wrong VNFM_SECRET_KEY? list retired keys in VNFM_SECRET_KEYS_OLD)")
	}
	return nil, errors.New("secrets: value is not sealed")
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
