package remote

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"
)

// Output bounds.
const (
	// TailLines and TailBytes bound the output tails in a CommandError.
	TailLines = 40
	TailBytes = 4 << 10
	// DefaultMaxLineLen is the longest line handed to RunOpts.Output;
	// the rest of a longer line is dropped and counted.
	DefaultMaxLineLen = 4 << 10
	// DefaultMaxOutput is how much of stdout and of stderr Result keeps
	// (the last bytes).
	DefaultMaxOutput = 1 << 20
)

// Stream tells stdout from stderr.
type Stream int

const (
	Stdout Stream = iota + 1
	Stderr
)

func (s Stream) String() string {
	switch s {
	case Stdout:
		return "stdout"
	case Stderr:
		return "stderr"
	}
	return fmt.Sprintf("Stream(%d)", int(s))
}

// runOutput collects one command's output: it splits both streams into
// masked, length-bounded lines for the callback and the error tails, and
// keeps the raw last bytes for Result. Memory is bounded whatever the
// command prints.
type runOutput struct {
	mu      sync.Mutex
	mask    *masker
	cb      func(Stream, string)
	maxLine int
	closed  bool
	streams [2]*streamSink
}

func newRunOutput(m *masker, cb func(Stream, string), maxLine, maxOutput int) *runOutput {
	if maxLine <= 0 {
		maxLine = DefaultMaxLineLen
	}
	if maxOutput <= 0 {
		maxOutput = DefaultMaxOutput
	}
	o := &runOutput{mask: m, cb: cb, maxLine: maxLine}
	for i, s := range []Stream{Stdout, Stderr} {
		o.streams[i] = &streamSink{o: o, stream: s, raw: rawTail{max: maxOutput}}
	}
	return o
}

func (o *runOutput) stdout() *streamSink { return o.streams[0] }
func (o *runOutput) stderr() *streamSink { return o.streams[1] }

// finish flushes partial last lines; later writes (a command still
// printing after an abort) are dropped, so the callback is never called
// after Run returns.
func (o *runOutput) finish() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return
	}
	for _, s := range o.streams {
		if len(s.line) > 0 || s.dropped > 0 {
			s.emit()
		}
	}
	o.closed = true
}

type streamSink struct {
	o       *runOutput
	stream  Stream
	raw     rawTail
	line    []byte // the current line, at most maxLine+longest secret bytes
	dropped int    // bytes of the current line beyond that
	tail    lineTail
}

func (s *streamSink) Write(p []byte) (int, error) {
	o := s.o
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return len(p), nil
	}
	s.raw.write(p)
	limit := o.maxLine + o.mask.maxLen()
	for rest := p; len(rest) > 0; {
		chunk := rest
		i := bytes.IndexByte(rest, '\n')
		if i >= 0 {
			chunk, rest = rest[:i], rest[i+1:]
		} else {
			rest = nil
		}
		if room := limit - len(s.line); len(chunk) > room {
			s.line = append(s.line, chunk[:max(room, 0)]...)
			s.dropped += len(chunk) - max(room, 0)
		} else {
			s.line = append(s.line, chunk...)
		}
		if i >= 0 {
			s.emit()
		}
	}
	return len(p), nil
}

// emit hands the current line (masked, bounded) to the callback and the tail.
func (s *streamSink) emit() {
	o := s.o
	raw := string(bytes.TrimSuffix(s.line, []byte("\r")))
	dropped := s.dropped
	s.line, s.dropped = s.line[:0], 0
	if dropped > 0 {
		// The line goes on beyond the buffer: a secret may start near the
		// end and continue in the dropped part. Cut any suffix that could
		// be the beginning of a secret before masking.
		cut := o.mask.partialSuffix(raw)
		raw, dropped = raw[:len(raw)-cut], dropped+cut
	}
	text := o.mask.mask(raw)
	if len(text) > o.maxLine {
		n := o.maxLine
		for n > 0 && !utf8.RuneStart(text[n]) {
			n--
		}
		dropped += len(text) - n
		text = text[:n]
	}
	if dropped > 0 {
		text += fmt.Sprintf(" …[%d bytes truncated]", dropped)
	}
	text = strings.ToValidUTF8(text, "\uFFFD")
	s.tail.add(text)
	if o.cb != nil {
		o.cb(s.stream, text)
	}
}

// maxLen is the longest masked value (0 for no masker).
func (m *masker) maxLen() int {
	if m == nil {
		return 0
	}
	return m.max
}

// partialSuffix returns the length of the longest suffix of s that is a
// proper prefix of a masked value.
func (m *masker) partialSuffix(s string) int {
	if m == nil {
		return 0
	}
	best := 0
	for _, v := range m.vals {
		for k := min(len(v)-1, len(s)); k > best; k-- {
			if strings.HasSuffix(s, v[:k]) {
				best = k
				break
			}
		}
	}
	return best
}

// rawTail keeps the last max bytes written.
type rawTail struct {
	max   int
	buf   []byte
	total int64
}

func (r *rawTail) write(p []byte) {
	r.total += int64(len(p))
	if len(p) >= r.max {
		r.buf = append(r.buf[:0], p[len(p)-r.max:]...)
		return
	}
	r.buf = append(r.buf, p...)
	if len(r.buf) > 2*r.max {
		r.buf = append(r.buf[:0], r.buf[len(r.buf)-r.max:]...)
	}
}

func (r *rawTail) bytes() []byte {
	if len(r.buf) > r.max {
		return r.buf[len(r.buf)-r.max:]
	}
	return r.buf
}

func (r *rawTail) truncated() bool { return r.total > int64(r.max) }

// lineTail keeps the last TailLines lines within TailBytes.
type lineTail struct {
	lines []string
	size  int
}

func (t *lineTail) add(line string) {
	if len(line) > TailBytes {
		n := len(line) - TailBytes
		for n < len(line) && !utf8.RuneStart(line[n]) {
			n++
		}
		line = line[n:]
	}
	t.lines = append(t.lines, line)
	t.size += len(line) + 1
	for len(t.lines) > TailLines || t.size > TailBytes {
		t.size -= len(t.lines[0]) + 1
		t.lines = t.lines[1:]
	}
}

func (t *lineTail) String() string {
	if len(t.lines) == 0 {
		return ""
	}
	return strings.Join(t.lines, "\n") + "\n"
}
