package pep508

import (
	"fmt"
	"strings"
)

// parser reads a marker by recursive descent; pos is a byte offset.
type parser struct {
	src string
	pos int
}

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("at byte %d: %s", p.pos, fmt.Sprintf(format, args...))
}

// ws skips spaces and tabs (a line break is not white space here).
func (p *parser) ws() {
	for p.pos < len(p.src) && (p.src[p.pos] == ' ' || p.src[p.pos] == '\t') {
		p.pos++
	}
}

// word reports whether the keyword w starts at pos as a whole word, and
// consumes it (and the white space before it) if so.
func (p *parser) word(w string) bool {
	save := p.pos
	p.ws()
	if strings.HasPrefix(p.src[p.pos:], w) && !isIdent(p.at(p.pos+len(w))) && (p.pos == 0 || !isIdent(p.src[p.pos-1])) {
		p.pos += len(w)
		return true
	}
	p.pos = save
	return false
}

func (p *parser) at(i int) byte {
	if i < len(p.src) {
		return p.src[i]
	}
	return 0
}

func isIdent(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// or reads `and_expr ("or" and_expr)*`.
func (p *parser) or(depth int) (node, error) {
	return p.chain(depth, "or", p.and)
}

// and reads `atom ("and" atom)*`.
func (p *parser) and(depth int) (node, error) {
	return p.chain(depth, "and", p.atom)
}

func (p *parser) chain(depth int, op string, next func(int) (node, error)) (node, error) {
	first, err := next(depth)
	if err != nil {
		return node{}, err
	}
	n := node{op: op, children: []node{first}}
	for p.word(op) {
		c, err := next(depth)
		if err != nil {
			return node{}, err
		}
		n.children = append(n.children, c)
	}
	if len(n.children) == 1 {
		return first, nil
	}
	return n, nil
}

// atom reads `"(" or ")"` or a comparison.
func (p *parser) atom(depth int) (node, error) {
	p.ws()
	if p.at(p.pos) != '(' {
		c, err := p.comparison()
		return node{cmp: c}, err
	}
	if depth == maxDepth {
		return node{}, p.errorf("parentheses nested deeper than %d", maxDepth)
	}
	p.pos++
	n, err := p.or(depth + 1)
	if err != nil {
		return node{}, err
	}
	p.ws()
	if p.at(p.pos) != ')' {
		return node{}, p.errorf("expected ')'")
	}
	p.pos++
	return n, nil
}

// ops are the comparison operators, longest first.
var ops = []string{"===", "==", "~=", "!=", "<=", ">=", "<", ">"}

func (p *parser) comparison() (comparison, error) {
	lhs, err := p.operand()
	if err != nil {
		return comparison{}, err
	}
	c := comparison{lhs: lhs}
	p.ws()
	switch {
	case p.word("in"):
		c.op = "in"
	case p.word("not"):
		if !p.ws1() || !p.word("in") {
			return comparison{}, p.errorf("expected 'in' after 'not'")
		}
		c.op = "not in"
	default:
		for _, o := range ops {
			if strings.HasPrefix(p.src[p.pos:], o) {
				c.op = o
				p.pos += len(o)
				break
			}
		}
		if c.op == "" {
			return comparison{}, p.errorf("expected an operator (<=, <, !=, ==, >=, >, ~=, ===, in, not in)")
		}
	}
	if c.rhs, err = p.operand(); err != nil {
		return comparison{}, err
	}
	return c, nil
}

// ws1 skips white space and reports whether there was any.
func (p *parser) ws1() bool {
	start := p.pos
	p.ws()
	return p.pos > start
}

// variables maps each marker variable, legacy spellings included, to its
// PEP 508 name.
var variables = map[string]string{
	"python_version": "python_version", "python_full_version": "python_full_version",
	"os_name": "os_name", "os.name": "os_name",
	"sys_platform": "sys_platform", "sys.platform": "sys_platform",
	"platform_release": "platform_release", "platform_system": "platform_system",
	"platform_version": "platform_version", "platform.version": "platform_version",
	"platform_machine": "platform_machine", "platform.machine": "platform_machine",
	"platform_python_implementation": "platform_python_implementation",
	"platform.python_implementation": "platform_python_implementation",
	"python_implementation":          "platform_python_implementation",
	"implementation_name":            "implementation_name", "implementation_version": "implementation_version",
	"extra": "extra", "extras": "extras", "dependency_groups": "dependency_groups",
}

// operand reads a variable or a quoted string ('…' or "…", without
// backslashes: PEP 508's python_str has no escapes).
func (p *parser) operand() (operand, error) {
	p.ws()
	if q := p.at(p.pos); q == '\'' || q == '"' {
		end := strings.IndexByte(p.src[p.pos+1:], q)
		if end < 0 {
			return operand{}, p.errorf("unterminated quoted string")
		}
		v := p.src[p.pos+1 : p.pos+1+end]
		if strings.ContainsAny(v, "\\\r\n") {
			return operand{}, p.errorf("a quoted string holds no backslash or line break")
		}
		p.pos += end + 2
		return operand{value: v}, nil
	}
	start := p.pos
	for p.pos < len(p.src) && (isIdent(p.src[p.pos]) || p.src[p.pos] == '.') {
		p.pos++
	}
	name, ok := variables[p.src[start:p.pos]]
	if !ok {
		p.pos = start
		return operand{}, p.errorf("expected a marker variable or a quoted string")
	}
	return operand{variable: name}, nil
}
