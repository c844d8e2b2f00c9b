package sol013

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Limits on what ParseFilter accepts. They keep a hostile query from making
// the server build huge ASTs or SQL statements.
const (
	MaxFilterBytes = 8 << 10 // length of the decoded filter string
	MaxTerms       = 64      // expressions joined by ';'
	MaxPathDepth   = 16      // segments in one attribute path
)

// Op is a SOL013 filter operator.
type Op string

// The SOL013 §5.2 operators.
const (
	OpEq    Op = "eq"
	OpNeq   Op = "neq"
	OpGt    Op = "gt"
	OpGte   Op = "gte"
	OpLt    Op = "lt"
	OpLte   Op = "lte"
	OpIn    Op = "in"
	OpNin   Op = "nin"
	OpCont  Op = "cont"
	OpNcont Op = "ncont"
)

const opList = "eq, neq, gt, gte, lt, lte, in, nin, cont, ncont"

func (o Op) valid() bool {
	switch o {
	case OpEq, OpNeq, OpGt, OpGte, OpLt, OpLte, OpIn, OpNin, OpCont, OpNcont:
		return true
	}
	return false
}

// multi reports whether the operator takes one or more values (the others
// take exactly one).
func (o Op) multi() bool {
	return o == OpIn || o == OpNin || o == OpCont || o == OpNcont
}

// negated reports whether o is the negation of another operator; negated
// operators match documents where the attribute is missing.
func (o Op) negated() bool {
	return o == OpNeq || o == OpNin || o == OpNcont
}

// positive maps a negated operator to the operator it negates.
func (o Op) positive() Op {
	switch o {
	case OpNeq:
		return OpEq
	case OpNin:
		return OpIn
	case OpNcont:
		return OpCont
	}
	return o
}

func (o Op) ordering() bool {
	return o == OpGt || o == OpGte || o == OpLt || o == OpLte
}

// Term is one "(op,attr/path,value,...)" expression.
type Term struct {
	Op     Op
	Path   []string // attribute path, split at '/'
	Values []string // unquoted values
	// Offset is the byte offset of the term's '(' in the parsed input, used
	// in error messages; it is 0 for terms built in code.
	Offset int
	// kind is the attribute's kind, recorded by Validate (KindAny before).
	kind Kind
}

// Filter is a parsed SOL013 attribute-based filter: the AND of its terms.
// A nil *Filter matches everything.
type Filter struct {
	Terms []Term
}

// ParseError describes a syntax error in a filter expression.
type ParseError struct {
	Offset int    // byte offset into the filter string
	Msg    string // what is wrong
	Hint   string // how to fix it; may be empty
}

func (e *ParseError) Error() string {
	s := fmt.Sprintf("filter: %s at offset %d", e.Msg, e.Offset)
	if e.Hint != "" {
		s += "; " + e.Hint
	}
	return s
}

// ParseFilter parses the (already URL-decoded) value of the "filter" query
// parameter. All errors are *ParseError.
func ParseFilter(s string) (*Filter, error) {
	if len(s) > MaxFilterBytes {
		return nil, &ParseError{Offset: MaxFilterBytes,
			Msg:  fmt.Sprintf("filter is %d bytes long, more than the limit of %d", len(s), MaxFilterBytes),
			Hint: "use fewer or shorter expressions"}
	}
	if s == "" {
		return nil, &ParseError{Msg: "filter is empty", Hint: "give at least one expression such as (eq,id,abc) or leave out the filter parameter"}
	}
	// Reject what PostgreSQL text cannot hold so that SQL and Match agree.
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			return nil, &ParseError{Offset: i, Msg: "invalid UTF-8", Hint: "percent-encode the filter as UTF-8"}
		}
		if r == 0 {
			return nil, &ParseError{Offset: i, Msg: "NUL character", Hint: "remove the NUL (%00) character"}
		}
		i += n
	}
	p := parser{s: s}
	f := &Filter{}
	for {
		if len(f.Terms) == MaxTerms {
			return nil, &ParseError{Offset: p.pos, Msg: fmt.Sprintf("more than %d expressions", MaxTerms), Hint: "use in/nin with several values instead of many expressions"}
		}
		t, err := p.term()
		if err != nil {
			return nil, err
		}
		f.Terms = append(f.Terms, t)
		if p.pos == len(s) {
			return f, nil
		}
		if s[p.pos] != ';' {
			return nil, &ParseError{Offset: p.pos, Msg: fmt.Sprintf("unexpected %s after ')'", p.show()),
				Hint: "separate expressions with ';' as in (eq,a,1);(eq,b,2)"}
		}
		p.pos++
		if p.pos == len(s) {
			return nil, &ParseError{Offset: p.pos, Msg: "filter ends with ';'", Hint: "remove the trailing ';' or add another expression"}
		}
	}
}

type parser struct {
	s   string
	pos int
}

// show describes the character at p.pos for error messages.
func (p *parser) show() string {
	if p.pos >= len(p.s) {
		return "end of filter"
	}
	r, _ := utf8.DecodeRuneInString(p.s[p.pos:])
	return fmt.Sprintf("%q", r)
}

// until returns the text from p.pos up to (not including) the first byte
// of stop, or the rest of the input.
func (p *parser) until(stop string) string {
	rest := p.s[p.pos:]
	if i := strings.IndexAny(rest, stop); i >= 0 {
		return rest[:i]
	}
	return rest
}

func (p *parser) unclosed(start int) *ParseError {
	return &ParseError{Offset: len(p.s), Msg: "missing ')'",
		Hint: fmt.Sprintf("close the expression that starts at offset %d", start)}
}

func (p *parser) term() (Term, error) {
	start := p.pos
	if p.s[p.pos] != '(' {
		return Term{}, &ParseError{Offset: p.pos, Msg: fmt.Sprintf("expected '(' but found %s", p.show()),
			Hint: "each expression looks like (op,attribute,value)"}
	}
	p.pos++
	t := Term{Offset: start}

	// Operator.
	opStart := p.pos
	op := p.until(",)")
	p.pos += len(op)
	switch {
	case op == "":
		return t, &ParseError{Offset: opStart, Msg: "missing operator", Hint: "use one of " + opList}
	case !Op(op).valid():
		hint := "use one of " + opList
		if l := strings.ToLower(op); Op(l).valid() {
			hint = fmt.Sprintf("operators are lower case: use %q", l)
		}
		return t, &ParseError{Offset: opStart, Msg: fmt.Sprintf("unknown operator %q", op), Hint: hint}
	}
	t.Op = Op(op)
	if p.pos == len(p.s) {
		return t, p.unclosed(start)
	}
	if p.s[p.pos] == ')' {
		return t, &ParseError{Offset: p.pos, Msg: "missing attribute after operator " + op,
			Hint: fmt.Sprintf("write (%s,attribute,value)", op)}
	}
	p.pos++ // ','

	// Attribute path.
	attrStart := p.pos
	attr := p.until(",)")
	for i, r := range attr {
		if r == '(' || r == '\'' || r == ';' || r < 0x20 || r == 0x7f {
			return t, &ParseError{Offset: attrStart + i, Msg: fmt.Sprintf("invalid character %q in attribute name", r),
				Hint: "attribute names cannot contain ( ' ; or control characters"}
		}
	}
	segStart := attrStart
	for seg := range strings.SplitSeq(attr, "/") {
		if seg == "" {
			msg := "empty attribute name"
			if attr != "" {
				msg = fmt.Sprintf("empty segment in attribute path %q", attr)
			}
			return t, &ParseError{Offset: segStart, Msg: msg, Hint: "attribute paths look like name or parent/child"}
		}
		if len(t.Path) == MaxPathDepth {
			return t, &ParseError{Offset: segStart, Msg: fmt.Sprintf("attribute path has more than %d segments", MaxPathDepth)}
		}
		t.Path = append(t.Path, seg)
		segStart += len(seg) + 1
	}
	p.pos += len(attr)

	// Values.
	for p.pos < len(p.s) && p.s[p.pos] == ',' {
		p.pos++
		valStart := p.pos
		v, err := p.value(start)
		if err != nil {
			return t, err
		}
		if len(t.Values) == 1 && !t.Op.multi() {
			return t, &ParseError{Offset: valStart, Msg: fmt.Sprintf("operator %s takes exactly one value", op),
				Hint: "put a value that contains ',' in single quotes, e.g. 'a,b', or use in for several values"}
		}
		t.Values = append(t.Values, v)
	}
	if p.pos == len(p.s) {
		return t, p.unclosed(start)
	}
	// p.until stopped at ',' or ')', and the loop consumed every ','.
	if len(t.Values) == 0 {
		return t, &ParseError{Offset: p.pos, Msg: fmt.Sprintf("missing value for operator %s", op),
			Hint: fmt.Sprintf("write (%s,%s,value); use '' for an empty string", op, attr)}
	}
	p.pos++ // ')'
	return t, nil
}

// value parses one quoted or unquoted value; p.pos is just after its ','.
func (p *parser) value(termStart int) (string, error) {
	start := p.pos
	if p.pos < len(p.s) && p.s[p.pos] == '\'' {
		var b strings.Builder
		p.pos++
		for {
			i := strings.IndexByte(p.s[p.pos:], '\'')
			if i < 0 {
				return "", &ParseError{Offset: start, Msg: "unterminated quoted value",
					Hint: "end the value with ' and write '' for a quote inside it"}
			}
			b.WriteString(p.s[p.pos : p.pos+i])
			p.pos += i + 1
			if p.pos < len(p.s) && p.s[p.pos] == '\'' { // doubled quote
				b.WriteByte('\'')
				p.pos++
				continue
			}
			break
		}
		if p.pos < len(p.s) && p.s[p.pos] != ',' && p.s[p.pos] != ')' {
			return "", &ParseError{Offset: p.pos, Msg: fmt.Sprintf("unexpected %s after quoted value", p.show()),
				Hint: "a quoted value ends with ' followed by ',' or ')'; write '' for a quote inside it"}
		}
		return b.String(), nil
	}
	v := p.until(",)")
	if i := strings.IndexAny(v, "'(;"); i >= 0 {
		p.pos += i
		switch v[i] {
		case '\'':
			return "", &ParseError{Offset: p.pos, Msg: "quote character inside an unquoted value",
				Hint: "put the whole value in single quotes and double the quote, e.g. " + quote(v)}
		case ';':
			return "", &ParseError{Offset: p.pos, Msg: fmt.Sprintf("';' inside the expression that starts at offset %d", termStart),
				Hint: "close the expression with ')' before ';', or put a value containing ';' in single quotes"}
		default:
			return "", &ParseError{Offset: p.pos, Msg: "'(' inside an unquoted value",
				Hint: "put a value containing '(' in single quotes, e.g. " + quote(v)}
		}
	}
	if v == "" {
		return "", &ParseError{Offset: start, Msg: "empty value", Hint: "write '' for an empty string"}
	}
	p.pos += len(v)
	return v, nil
}

// quote returns v in single quotes with inner quotes doubled.
func quote(v string) string {
	return "'" + strings.ReplaceAll(v, "'", "''") + "'"
}

// String returns the filter in canonical form: terms joined by ';' and
// values quoted only where needed. For a parsed filter, ParseFilter of the
// result yields the same terms.
func (f *Filter) String() string {
	if f == nil {
		return ""
	}
	var b strings.Builder
	for i, t := range f.Terms {
		if i > 0 {
			b.WriteByte(';')
		}
		b.WriteString(t.String())
	}
	return b.String()
}

// String returns the term in canonical "(op,a/b,value,...)" form.
func (t Term) String() string {
	var b strings.Builder
	b.WriteByte('(')
	b.WriteString(string(t.Op))
	b.WriteByte(',')
	b.WriteString(strings.Join(t.Path, "/"))
	for _, v := range t.Values {
		b.WriteByte(',')
		if v == "" || strings.ContainsAny(v, ",()';") {
			b.WriteString(quote(v))
		} else {
			b.WriteString(v)
		}
	}
	b.WriteByte(')')
	return b.String()
}

// attr returns the term's attribute path as written in a filter.
func (t Term) attr() string { return strings.Join(t.Path, "/") }
