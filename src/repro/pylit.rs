//! A reader for the Python literals a repro file holds (`INPUTS = {'x': 255, 'f': nan}`,
//! `BUFFERS = {0: [1.5, -inf]}`, `RULES = 'sym'`): ints, floats (Python `repr` incl. the names
//! `nan`/`inf` the repro imports from `math`), `True`/`False`/`None`, strings, lists, tuples and
//! dicts. Strict, bounded ([`MAX_DEPTH`], [`MAX_ITEMS`]) and panic-free: a repro is untrusted input.
use crate::ir::alu::Val;
use crate::ir::pylex;

/// Deepest nesting of brackets and unary signs.
pub const MAX_DEPTH: usize = 16;
/// Most items in one list/dict (a buffer of a generated kernel is far smaller).
pub const MAX_ITEMS: usize = 1 << 20;

#[derive(Clone, Debug, PartialEq)]
pub enum Lit {
    None,
    Bool(bool),
    Int(i128),
    Float(f64),
    Str(String),
    List(Vec<Lit>),
    Dict(Vec<(Lit, Lit)>),
}

impl Lit {
    /// The runtime value of a number or bool literal.
    pub fn to_val(&self) -> Option<Val> {
        match *self {
            Lit::Bool(b) => Some(Val::Bool(b)),
            Lit::Int(i) => Some(Val::Int(i)),
            Lit::Float(f) => Some(Val::Float(f)),
            _ => None,
        }
    }
    pub fn kind(&self) -> &'static str {
        match self {
            Lit::None => "None",
            Lit::Bool(_) => "a bool",
            Lit::Int(_) => "an int",
            Lit::Float(_) => "a float",
            Lit::Str(_) => "a string",
            Lit::List(_) => "a list",
            Lit::Dict(_) => "a dict",
        }
    }
}

/// An error at byte offset `.0` of the parsed text.
pub type LitErr = (usize, String);

/// Parses one literal that spans all of `s` (surrounding whitespace and a trailing `# comment`
/// allowed).
pub fn parse(s: &str) -> Result<Lit, LitErr> {
    let mut p = P {
        t: s,
        s: s.as_bytes(),
        i: 0,
    };
    let v = p.value(0)?;
    p.ws();
    if p.i < p.s.len() && p.s[p.i] != b'#' {
        return Err((p.i, "unexpected text after the literal".into()));
    }
    Ok(v)
}

/// Python `repr` of a runtime value (what [`parse`] reads back to the same value).
pub fn val_repr(v: &Val) -> String {
    v.py_repr()
}

struct P<'a> {
    t: &'a str,
    s: &'a [u8],
    i: usize,
}

impl P<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && matches!(self.s[self.i], b' ' | b'\t') {
            self.i += 1;
        }
    }
    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.s.get(self.i).copied()
    }
    fn value(&mut self, depth: usize) -> Result<Lit, LitErr> {
        if depth > MAX_DEPTH {
            return Err((self.i, format!("literal nested deeper than {MAX_DEPTH}")));
        }
        let start = self.i;
        match self.peek() {
            None => Err((self.i, "expected a value".into())),
            Some(b'{') => {
                self.i += 1;
                let mut items = Vec::new();
                loop {
                    if self.peek() == Some(b'}') {
                        self.i += 1;
                        return Ok(Lit::Dict(items));
                    }
                    let k = self.value(depth + 1)?;
                    if self.peek() != Some(b':') {
                        return Err((self.i, "expected ':' in a dict".into()));
                    }
                    self.i += 1;
                    let v = self.value(depth + 1)?;
                    items.push((k, v));
                    if items.len() > MAX_ITEMS {
                        return Err((start, format!("more than {MAX_ITEMS} items")));
                    }
                    match self.peek() {
                        Some(b',') => self.i += 1,
                        Some(b'}') => {}
                        _ => return Err((self.i, "expected ',' or '}'".into())),
                    }
                }
            }
            Some(open @ (b'[' | b'(')) => {
                let close = if open == b'[' { b']' } else { b')' };
                self.i += 1;
                let mut items = Vec::new();
                loop {
                    if self.peek() == Some(close) {
                        self.i += 1;
                        return Ok(Lit::List(items));
                    }
                    items.push(self.value(depth + 1)?);
                    if items.len() > MAX_ITEMS {
                        return Err((start, format!("more than {MAX_ITEMS} items")));
                    }
                    match self.peek() {
                        Some(b',') => self.i += 1,
                        Some(c) if c == close => {}
                        _ => return Err((self.i, format!("expected ',' or '{}'", close as char))),
                    }
                }
            }
            Some(b'\'' | b'"') => self.string(),
            Some(sign @ (b'-' | b'+')) => {
                self.i += 1;
                let at = self.i;
                if sign == b'-' && self.peek().is_some_and(|c| c.is_ascii_digit() || c == b'.') {
                    // parsed with its sign, so i128::MIN reads
                    return self.number(true);
                }
                match self.value(depth + 1)? {
                    Lit::Int(i) if sign == b'-' => i
                        .checked_neg()
                        .map(Lit::Int)
                        .ok_or((at, "int beyond the i128 range".into())),
                    Lit::Float(f) if sign == b'-' => Ok(Lit::Float(-f)),
                    Lit::Bool(b) if sign == b'-' => Ok(Lit::Int(-(b as i128))),
                    Lit::Bool(b) => Ok(Lit::Int(b as i128)),
                    v @ (Lit::Int(_) | Lit::Float(_)) => Ok(v),
                    v => Err((
                        at,
                        format!("bad operand for unary {}: {}", sign as char, v.kind()),
                    )),
                }
            }
            Some(c) if c.is_ascii_digit() || c == b'.' => self.number(false),
            Some(c) if c.is_ascii_alphabetic() || c == b'_' => {
                let st = self.i;
                while self.i < self.s.len()
                    && (self.s[self.i].is_ascii_alphanumeric() || self.s[self.i] == b'_')
                {
                    self.i += 1;
                }
                match &self.s[st..self.i] {
                    b"True" => Ok(Lit::Bool(true)),
                    b"False" => Ok(Lit::Bool(false)),
                    b"None" => Ok(Lit::None),
                    b"nan" => Ok(Lit::Float(f64::NAN)),
                    b"inf" => Ok(Lit::Float(f64::INFINITY)),
                    w => Err((st, format!("unknown name {:?}", String::from_utf8_lossy(w)))),
                }
            }
            Some(c) => Err((self.i, format!("unexpected character {:?}", c as char))),
        }
    }

    fn number(&mut self, neg: bool) -> Result<Lit, LitErr> {
        let st = self.i;
        let (n, end) = pylex::number(self.s, st)?;
        self.i = end;
        match n {
            pylex::Num::Float(f) => Ok(Lit::Float(if neg { -f } else { f })),
            pylex::Num::Int(m) => {
                // a magnitude with its sign, so i128::MIN reads
                let v = m.and_then(|m| {
                    if neg {
                        0i128.checked_sub_unsigned(m)
                    } else {
                        i128::try_from(m).ok()
                    }
                });
                v.map(Lit::Int)
                    .ok_or((st, "int literal beyond the i128 range".into()))
            }
        }
    }

    fn string(&mut self) -> Result<Lit, LitErr> {
        let (s, end) = pylex::string(self.t, self.i)?;
        self.i = end;
        Ok(Lit::Str(s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn reads_repro_literals() {
        let v = parse("{'x': 255, \"f\": -inf, 'n': nan, 'b': True, 'z': -0.0, 'e': 1e+300} # c")
            .unwrap();
        let Lit::Dict(items) = v else { panic!() };
        assert_eq!(items[0], (Lit::Str("x".into()), Lit::Int(255)));
        assert_eq!(items[1].1, Lit::Float(f64::NEG_INFINITY));
        assert!(matches!(items[2].1, Lit::Float(f) if f.is_nan()));
        assert_eq!(items[3].1, Lit::Bool(true));
        assert!(matches!(items[4].1, Lit::Float(f) if f == 0.0 && f.is_sign_negative()));
        assert_eq!(items[5].1, Lit::Float(1e300));
        assert_eq!(
            parse("{0: [1, -2], 1: (0.5,)}").unwrap(),
            Lit::Dict(vec![
                (Lit::Int(0), Lit::List(vec![Lit::Int(1), Lit::Int(-2)])),
                (Lit::Int(1), Lit::List(vec![Lit::Float(0.5)])),
            ])
        );
        assert_eq!(parse(&i128::MIN.to_string()).unwrap(), Lit::Int(i128::MIN));
        assert_eq!(
            parse("'a\\'b\\x41\\u00e9'").unwrap(),
            Lit::Str("a'bA\u{e9}".into())
        );
    }
    #[test]
    fn rejects_bad_literals_with_offsets() {
        for (s, at) in [
            ("{'x' 1}", 5),
            ("[1, 2", 5),
            ("{'x': foo}", 6),
            ("1 2", 2),
            ("'abc", 0),
            ("170141183460469231731687303715884105728", 0),
            ("[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]", 17),
            ("-'a'", 1),
        ] {
            let e = parse(s).unwrap_err();
            assert_eq!(e.0, at, "{s}: {e:?}");
        }
    }
    #[test]
    fn float_reprs_round_trip() {
        for f in [
            0.1,
            -0.0,
            1e-300,
            5e-324,
            f64::MAX,
            1.0 / 3.0,
            1e16,
            123456.789,
        ] {
            let s = val_repr(&Val::Float(f));
            assert_eq!(parse(&s).unwrap(), Lit::Float(f), "{s}");
        }
    }
}
