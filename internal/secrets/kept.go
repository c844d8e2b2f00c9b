package secrets

// Kept remembers sealed values by place and plaintext — those a document was
// opened from and those sealed into it — so that sealing the document again
// keeps each value that did not change as it was stored instead of sealing
// it anew: an operation opens an instance and seals it back when it
// finishes, and seals its working copy after every step, with most secrets
// unchanged. Only values sealed with the current key in the current format,
// opened at their place, are remembered: keeping one is what SealJSON does
// with such a value found in the document. The zero value is ready; a Kept
// is not safe for concurrent use.
type Kept struct {
	m map[keptKey]string
}

type keptKey struct{ row, path, plain string }

func (k *Kept) get(at Place, plain []byte) (string, bool) {
	s, ok := k.m[keptKey{at.Row, at.Path, string(plain)}]
	return s, ok
}

func (k *Kept) put(at Place, plain []byte, sealed string) {
	if k.m == nil {
		k.m = map[keptKey]string{}
	}
	k.m[keptKey{at.Row, at.Path, string(plain)}] = sealed
}

// OpenJSONKept is OpenJSON that remembers in k every value it opens.
func (b *Box) OpenJSONKept(raw []byte, p Place, k *Kept) ([]byte, error) {
	return b.openJSON(raw, p, k)
}

// SealJSONKept is SealJSON that keeps, for a value whose plaintext at its
// place k remembers, that sealed value, and remembers those it seals.
func (b *Box) SealJSONKept(raw []byte, p Place, k *Kept) ([]byte, error) {
	return b.sealJSON(raw, p, k)
}
