// Package secrets seals secret values inside JSON documents (AES-256-GCM),
// masks them for output and scrubs them out of free text. It decides in one
// place which keys are secret, so the store, the API and the logs agree.
package secrets

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Mask replaces every secret value on output.
const Mask = "******"

// Sealed value formats. v3 ("enc:v3:<keyid>:<base64(nonce|ciphertext)>")
// binds the value to where it lives: the GCM additional data is the header
// and the value's Place (row and JSON path), so a value copied to another
// row or field does not open. v2 ("enc:v2:<keyid>:…", the header as
// additional data) and v1 ("enc:v1:<base64>", no key id) are the formats of
// earlier releases: still opened wherever they are, and re-sealed as v3 by
// a rotation (Reseal, ResealDoc). Seal always writes v3.
const (
	sealedPrefixV1 = "enc:v1:"
	sealedPrefixV2 = "enc:v2:"
	sealedPrefixV3 = "enc:v3:"
)

// secretWords are matched against a key lower-cased with '_' and '-' removed.
// The list is documented in README ("Secrets") and openapi/vnflcm.yaml.
var secretWords = []string{
	"password", "passwd", "passphrase", "secret", "token", "privatekey",
	"sshkey", "credential", "certkey", "apikey", "bearer", "clientpassword",
}

// keyNormalizer is built once: IsSecretKey runs for every key of every document rendered.
var keyNormalizer = strings.NewReplacer("_", "", "-", "")

// secretWordsBy are secretWords by their first byte, for the
// allocation-free IsSecretKey: a key is secret when one of the words that
// begin with one of its bytes begins there.
var secretWordsBy = func() (by [256][][]byte) {
	for _, w := range secretWords {
		by[w[0]] = append(by[w[0]], []byte(w))
	}
	return by
}()

// IsSecretKey reports whether values under this JSON key are secret.
func IsSecretKey(key string) bool { return isSecretKey(key) }

func isSecretKey[K string | []byte](key K) bool {
	// Every key of every document sealed, opened, masked or scrubbed comes
	// here: an ASCII key is normalised on the stack, without allocating.
	var buf [64]byte
	n := 0
	for i := 0; i < len(key); i++ {
		c := key[i]
		switch {
		case c >= 0x80 || n == len(buf):
			return isSecretKeySlow(string(key)) // Unicode case mapping; a long key
		case c == '_' || c == '-':
			continue
		case 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		}
		buf[n] = c
		n++
	}
	for i := range n {
		for _, w := range secretWordsBy[buf[i]] {
			if bytes.HasPrefix(buf[i:n], w) {
				return true
			}
		}
	}
	return false
}

func isSecretKeySlow(key string) bool {
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

// SealAt encrypts plaintext with the current key into a self-describing
// string that names the key and opens only at p.
func (b *Box) SealAt(plain []byte, p Place) string {
	k := b.cur
	header := sealedPrefixV3 + k.id + ":"
	nonce := make([]byte, k.aead.NonceSize())
	_, _ = rand.Read(nonce)
	ct := k.aead.Seal(nonce, nonce, plain, p.aad(header))
	return header + base64.RawStdEncoding.EncodeToString(ct)
}

// IsSealed reports whether s came from SealAt (any format).
func IsSealed(s string) bool {
	return strings.HasPrefix(s, sealedPrefixV3) || strings.HasPrefix(s, sealedPrefixV2) || strings.HasPrefix(s, sealedPrefixV1)
}

// LooksSealed reports whether s has the shape of a sealed value of any
// format version, known or future ("enc:v<digits>:"): what a client must
// never send.
func LooksSealed(s string) bool {
	rest, ok := strings.CutPrefix(s, "enc:v")
	if !ok {
		return false
	}
	i := 0
	for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
		i++
	}
	return i > 0 && i < len(rest) && rest[i] == ':'
}

// ErrMisplaced: a sealed value is opened, or sealed over, at another place
// than the one it was sealed for.
var ErrMisplaced = errors.New("the sealed value belongs to another place")

// OpenAt decrypts a string produced by SealAt at the same place, with
// whichever configured key sealed it. Values of the v1 and v2 formats
// carry no place and open anywhere.
func (b *Box) OpenAt(s string, p Place) ([]byte, error) {
	switch {
	case strings.HasPrefix(s, sealedPrefixV3):
		k, id, raw, err := b.parseKeyed(s, sealedPrefixV3)
		if err != nil {
			return nil, err
		}
		n := k.aead.NonceSize()
		plain, err := k.aead.Open(nil, raw[:n], raw[n:], p.aad(sealedPrefixV3+id+":"))
		if err != nil {
			return nil, fmt.Errorf("secrets: cannot decrypt the sealed value at %s with key %s: %w, or it is corrupt", p, id, ErrMisplaced)
		}
		return plain, nil
	case strings.HasPrefix(s, sealedPrefixV2):
		k, id, raw, err := b.parseKeyed(s, sealedPrefixV2)
		if err != nil {
			return nil, err
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

// parseKeyed splits a v2/v3 value into its key, key id and payload.
func (b *Box) parseKeyed(s, prefix string) (*boxKey, string, []byte, error) {
	id, payload, ok := strings.Cut(strings.TrimPrefix(s, prefix), ":")
	if !ok {
		return nil, "", nil, errors.New("secrets: sealed value is corrupt")
	}
	k, known := b.byID[id]
	if !known {
		return nil, id, nil, fmt.Errorf("secrets: value was sealed with key %s, which is not configured (give that key in VNFM_SECRET_KEYS_OLD)", id)
	}
	raw, err := base64.RawStdEncoding.DecodeString(payload)
	if err != nil || len(raw) < k.aead.NonceSize() {
		return nil, id, nil, errors.New("secrets: sealed value is corrupt")
	}
	return k, id, raw, nil
}

// SealDoc returns a copy of a decoded JSON document (maps, slices, scalars)
// stored at p, whose values under secret keys are sealed, each at its own
// path. The JSON encoding of the value is sealed, so OpenDoc restores
// numbers, objects and arrays as they were. A value that is sealed already
// is kept when it is sealed for exactly this place with the current key,
// re-sealed when it is of an earlier format or key; a value sealed for
// another place is an error wrapping ErrMisplaced: it was copied here.
func (b *Box) SealDoc(v any, p Place) (any, error) {
	var firstErr error
	out := walk(v, p, func(val any, at Place) any {
		if s, ok := val.(string); ok && IsSealed(s) {
			if b.Current(s) {
				if _, err := b.OpenAt(s, at); err != nil {
					if firstErr == nil {
						firstErr = err
					}
					return Mask
				}
				return s
			}
			r, _, err := b.Reseal(s, at)
			if err != nil && firstErr == nil {
				firstErr = err
			}
			return r
		}
		raw, _ := json.Marshal(val)
		return b.SealAt(raw, at)
	})
	return out, firstErr
}

// OpenDoc reverses SealDoc for a document stored at p.
func (b *Box) OpenDoc(v any, p Place) (any, error) {
	var firstErr error
	out := walk(v, p, func(val any, at Place) any {
		s, ok := val.(string)
		if !ok || !IsSealed(s) {
			return val
		}
		raw, err := b.OpenAt(s, at)
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

// Generic returns v as encoding/json decodes its encoding — maps, slices,
// strings, json.Number (so numbers encode again as they were), bools and
// nils — the only form MaskDoc and SealDoc walk: a typed value inside a map
// (a struct, a []T) would otherwise hide the secrets in it.
func Generic(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return decodeNumbers(b)
}

// decodeNumbers decodes the JSON value raw with numbers as written
// (json.Number), and nothing after it.
func decodeNumbers(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// MaskDoc returns a copy with every value under a secret key replaced by Mask.
func MaskDoc(v any) any {
	return walk(v, Place{}, func(any, Place) any { return Mask })
}

// walk copies v, replacing the value of every secret key with f(value,
// its place).
func walk(v any, p Place, f func(any, Place) any) any {
	return walkAt(v, p, nil, f)
}

func walkAt(v any, base Place, t *trail, f func(any, Place) any) any {
	switch m := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(m))
		for k, val := range m {
			next := &trail{up: t, key: k}
			if IsSecretKey(k) && val != nil {
				out[k] = f(val, next.at(base))
				continue
			}
			out[k] = walkAt(val, base, next, f)
		}
		return out
	case []any:
		out := make([]any, len(m))
		next := &trail{up: t, elem: true}
		for i, val := range m {
			out[i] = walkAt(val, base, next, f)
		}
		return out
	default:
		return v
	}
}

// SealJSON seals a raw JSON document stored at p, as SealDoc seals it
// decoded: every non-null value under a secret key is sealed at its own
// place (the plaintext is the value's JSON as json.Marshal writes it), a
// value sealed for this place with the current key is kept, one of an older
// format or key re-sealed, one sealed for another place refused
// (ErrMisplaced). The document is not decoded: the values are found and
// replaced in its bytes (scanSecrets), the rest stays as written — the
// document itself when nothing is sealed. Invalid JSON is returned as an
// error, never stored.
func (b *Box) SealJSON(raw []byte, p Place) ([]byte, error) { return b.sealJSON(raw, p, nil) }

// sealJSON is SealJSON that, with k, keeps the sealed values k remembers
// and remembers those it seals (SealJSONKept).
func (b *Box) sealJSON(raw []byte, p Place, k *Kept) ([]byte, error) {
	if len(raw) == 0 {
		return raw, nil
	}
	visit := func(val []byte, at func() Place) ([]byte, error) {
		if s, ok := jsonString(val); ok && IsSealed(s) {
			if b.Current(s) {
				_, err := b.OpenAt(s, at())
				return nil, err
			}
			r, _, err := b.Reseal(s, at())
			if err != nil {
				return nil, err
			}
			return quoted(r), nil
		}
		plain, err := canonical(val)
		if err != nil {
			return nil, fmt.Errorf("secrets: %w", err)
		}
		if k == nil {
			return quoted(b.SealAt(plain, at())), nil
		}
		place := at()
		s, ok := k.get(place, plain)
		if !ok {
			s = b.SealAt(plain, place)
			k.put(place, plain, s)
		}
		return quoted(s), nil
	}
	// One pass checks the document and finds its secrets; one that it does
	// not take is judged by encoding/json, which words the error.
	out, err := scanValidSecrets(raw, p, visit)
	if errors.Is(err, errInvalid) {
		if err := validJSON(raw); err != nil {
			return nil, err
		}
		return scanSecrets(raw, p, visit)
	}
	return out, err
}

// quoted is the JSON string of a sealed value: its alphabet needs no escape.
func quoted(sealed string) []byte {
	out := make([]byte, 0, len(sealed)+2)
	return append(append(append(out, '"'), sealed...), '"')
}

// validJSON is json.Valid, with encoding/json's error for what is not.
func validJSON(raw []byte) error {
	if validDoc(raw) || json.Valid(raw) { // the second only for the error's sake
		return nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return fmt.Errorf("secrets: %w", err)
	}
	return fmt.Errorf("secrets: %w", errNotJSON)
}

// HasSealed reports whether a raw JSON document may hold a sealed value
// (false: it holds none).
func HasSealed(raw []byte) bool { return bytes.Contains(raw, []byte("enc:v")) }

// OpenJSON opens a raw JSON document sealed by SealJSON at p: each sealed
// value under a secret key is replaced by its plaintext JSON, in the
// document's bytes (scanSecrets), without decoding the document. A document
// without a sealed value is returned as it is.
func (b *Box) OpenJSON(raw []byte, p Place) ([]byte, error) { return b.openJSON(raw, p, nil) }

// openJSON is OpenJSON that, with k, remembers the values it opens
// (OpenJSONKept).
func (b *Box) openJSON(raw []byte, p Place, k *Kept) ([]byte, error) {
	if len(raw) == 0 {
		return raw, nil
	}
	if err := validJSON(raw); err != nil {
		return nil, err
	}
	if !HasSealed(raw) {
		return raw, nil
	}
	return scanSecrets(raw, p, func(val []byte, at func() Place) ([]byte, error) {
		s, ok := jsonString(val)
		if !ok || !IsSealed(s) {
			return nil, nil
		}
		place := at()
		plain, err := b.OpenAt(s, place)
		if err != nil {
			return nil, err
		}
		if !validDoc(plain) && !json.Valid(plain) {
			return nil, errors.New("secrets: sealed value is not JSON")
		}
		if k != nil && b.Current(s) {
			k.put(place, plain, s)
		}
		return plain, nil
	})
}

// MaskJSON masks a raw JSON document: the bytes of encoding it again after
// MaskDoc (keys sorted, strings as encoding/json writes them), made without
// decoding it (AppendMasked).
func MaskJSON(raw []byte) ([]byte, error) {
	if len(raw) == 0 {
		return raw, nil
	}
	if err := validJSON(raw); err != nil {
		return nil, err
	}
	return AppendMasked(make([]byte, 0, len(raw)), raw)
}

func transformJSON(raw []byte, f func(any) (any, error)) ([]byte, error) {
	if len(raw) == 0 {
		return raw, nil
	}
	v, err := decodeNumbers(raw)
	if err != nil {
		return nil, fmt.Errorf("secrets: %w", err)
	}
	out, err := f(v)
	if err != nil {
		return nil, err
	}
	return json.Marshal(out)
}

// ValuesJSON is Values of a raw JSON document, found without decoding it:
// only the values under secret keys are. Invalid JSON has no values.
func ValuesJSON(raw []byte) []string {
	var out []string
	_, err := scanSecrets(raw, Place{}, func(val []byte, _ func() Place) ([]byte, error) {
		var v any
		if err := json.Unmarshal(val, &v); err != nil {
			return nil, err
		}
		out = collectValues(v, true, out)
		return nil, nil
	})
	if err != nil {
		return nil
	}
	return out
}

// Values collects the plaintext string values under secret keys of a decoded
// document, for Scrub. Short values are skipped: masking "a" everywhere would
// destroy messages without protecting anything.
func Values(v any) []string { return collectValues(v, false, nil) }

func collectValues(v any, secret bool, out []string) []string {
	switch t := v.(type) {
	case map[string]any:
		for k, val := range t {
			out = collectValues(val, secret || IsSecretKey(k), out)
		}
	case []any:
		for _, val := range t {
			out = collectValues(val, secret, out)
		}
	case string:
		if secret && len(t) >= 4 && !IsSealed(t) {
			out = append(out, t)
		}
	}
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
