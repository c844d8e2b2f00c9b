package auth

import (
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Password hashes are PBKDF2-HMAC-SHA256 (Go's standard library, no extra
// dependency) in the PHC string format:
//
//	$pbkdf2-sha256$i=600000,l=32$<salt, base64 no padding>$<key, base64 no padding>
//
// 600,000 iterations is OWASP's 2023 recommendation for PBKDF2-SHA256 (about
// 0.1 s per check on one core); Authenticator caches a successful check for a
// few minutes so a client sending Basic on every request pays it once.
const (
	hashPrefix = "$pbkdf2-sha256$"
	// DefaultIterations is the PBKDF2 cost of new hashes.
	DefaultIterations = 600_000
	// MinRecommendedIterations: weaker hashes are accepted with a warning.
	MinRecommendedIterations = 100_000
	maxIterations            = 10_000_000
	saltLen, keyLen          = 16, 32
)

var b64 = base64.RawStdEncoding

// HashPassword hashes a password with DefaultIterations.
func HashPassword(password string) (string, error) {
	return HashPasswordIter(password, DefaultIterations)
}

// HashPasswordIter hashes a password with the given PBKDF2 iteration count
// (tests use a low one; production wants DefaultIterations).
func HashPasswordIter(password string, iter int) (string, error) {
	if password == "" {
		return "", errors.New("the password is empty")
	}
	if iter < 1 || iter > maxIterations {
		return "", fmt.Errorf("iterations must be between 1 and %d", maxIterations)
	}
	salt := make([]byte, saltLen)
	_, _ = rand.Read(salt)
	dk, err := pbkdf2.Key(sha256.New, password, salt, iter, keyLen)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%si=%d,l=%d$%s$%s", hashPrefix, iter, keyLen, b64.EncodeToString(salt), b64.EncodeToString(dk)), nil
}

// passwordHash is a parsed hash.
type passwordHash struct {
	iter int
	salt []byte
	key  []byte
}

func parsePasswordHash(s string) (*passwordHash, error) {
	rest, ok := strings.CutPrefix(s, hashPrefix)
	if !ok {
		return nil, errors.New("not a $pbkdf2-sha256$ hash (make one with: vnfm auth hash-password)")
	}
	parts := strings.Split(rest, "$")
	if len(parts) != 3 {
		return nil, errors.New("malformed $pbkdf2-sha256$ hash: want $pbkdf2-sha256$i=N,l=N$salt$key")
	}
	h := &passwordHash{}
	for _, kv := range strings.Split(parts[0], ",") {
		k, v, _ := strings.Cut(kv, "=")
		n, err := strconv.Atoi(v)
		if err != nil {
			return nil, fmt.Errorf("malformed $pbkdf2-sha256$ hash: parameter %q", kv)
		}
		switch k {
		case "i":
			h.iter = n
		case "l":
			if n != keyLen {
				return nil, fmt.Errorf("malformed $pbkdf2-sha256$ hash: key length %d, want %d", n, keyLen)
			}
		default:
			return nil, fmt.Errorf("malformed $pbkdf2-sha256$ hash: unknown parameter %q", k)
		}
	}
	if h.iter < 1 || h.iter > maxIterations {
		return nil, fmt.Errorf("malformed $pbkdf2-sha256$ hash: iterations must be between 1 and %d", maxIterations)
	}
	var err error
	if h.salt, err = b64.DecodeString(parts[1]); err != nil || len(h.salt) < 8 {
		return nil, errors.New("malformed $pbkdf2-sha256$ hash: salt is not base64 of at least 8 bytes")
	}
	if h.key, err = b64.DecodeString(parts[2]); err != nil || len(h.key) != keyLen {
		return nil, fmt.Errorf("malformed $pbkdf2-sha256$ hash: key is not base64 of %d bytes", keyLen)
	}
	return h, nil
}

// onVerify, set by tests, sees the cost of every check.
var onVerify func(iter int)

// verify compares in constant time.
func (h *passwordHash) verify(password string) bool {
	if onVerify != nil {
		onVerify(h.iter)
	}
	dk, err := pbkdf2.Key(sha256.New, password, h.salt, h.iter, keyLen)
	return err == nil && subtle.ConstantTimeCompare(dk, h.key) == 1
}

// VerifyPassword checks password against a hash made by HashPassword.
func VerifyPassword(hash, password string) (bool, error) {
	h, err := parsePasswordHash(hash)
	if err != nil {
		return false, err
	}
	return h.verify(password), nil
}
