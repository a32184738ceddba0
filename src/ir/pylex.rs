//! Python literal tokens, one scanner for every reader of Python text: the text form
//! (`ir::text`), the repro file's literals (`repro::pylit`) and the test suite's expression
//! interpreter. Strict and panic-free, with byte offsets for `file:line:col` errors.

/// Longest string, identifier or number literal a reader takes (a repro is untrusted input).
pub const MAX_STR_LEN: usize = 4096;

/// (byte offset, message).
pub type LexErr = (usize, String);

/// A number literal: an int's magnitude (`None` past u128; a sign is the reader's), or a float.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Num {
    Int(Option<u128>),
    Float(f64),
}

/// A Python number literal: decimal/hex/octal/binary ints and decimal floats, `_` between digits.
pub fn number(b: &[u8], start: usize) -> Result<(Num, usize), LexErr> {
    let mut i = start;
    let mut is_float = false;
    let prefixed = b[start] == b'0'
        && matches!(
            b.get(start + 1),
            Some(b'x' | b'X' | b'o' | b'O' | b'b' | b'B')
        );
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_alphanumeric() || c == b'_' || c == b'.' {
            if c == b'.' {
                is_float = true;
            }
            // the sign of a decimal exponent
            if (c == b'e' || c == b'E') && !prefixed {
                is_float = true;
                if b.get(i + 1).is_some_and(|x| *x == b'+' || *x == b'-') {
                    i += 1;
                }
            }
            i += 1;
        } else {
            break;
        }
    }
    let raw = std::str::from_utf8(&b[start..i]).unwrap_or("");
    let bad = || (start, format!("invalid number literal {raw:?}"));
    let bytes = raw.as_bytes();
    for (k, &c) in bytes.iter().enumerate() {
        if c == b'_'
            && !(k > 0
                && bytes[k - 1].is_ascii_alphanumeric()
                && bytes.get(k + 1).is_some_and(|x| x.is_ascii_alphanumeric()))
        {
            return Err(bad());
        }
    }
    let clean: String = raw.chars().filter(|c| *c != '_').collect();
    if raw.len() > MAX_STR_LEN {
        return Err((start, "number literal too long".into()));
    }
    let lower = clean.to_ascii_lowercase();
    let radix = if lower.starts_with("0x") {
        16
    } else if lower.starts_with("0o") {
        8
    } else if lower.starts_with("0b") {
        2
    } else {
        10
    };
    if radix != 10 {
        let digits = &lower[2..];
        if digits.is_empty() {
            return Err(bad());
        }
        return match u128::from_str_radix(digits, radix) {
            Ok(v) => Ok((Num::Int(Some(v)), i)),
            Err(e) if *e.kind() == std::num::IntErrorKind::PosOverflow => Ok((Num::Int(None), i)),
            Err(_) => Err(bad()),
        };
    }
    if is_float {
        // digits [. digits] [e [+-] digits], at least one digit in the mantissa
        let (mant, exp) = match lower.split_once('e') {
            Some((m, e)) => (m, Some(e)),
            None => (lower.as_str(), None),
        };
        let mant_ok = mant.bytes().filter(|c| *c == b'.').count() <= 1
            && mant.bytes().all(|c| c.is_ascii_digit() || c == b'.')
            && mant.bytes().any(|c| c.is_ascii_digit());
        let exp_ok = exp.is_none_or(|e| {
            let e = e.strip_prefix(['+', '-']).unwrap_or(e);
            !e.is_empty() && e.bytes().all(|c| c.is_ascii_digit())
        });
        if !mant_ok || !exp_ok {
            return Err(bad());
        }
        return lower
            .parse::<f64>()
            .map(|f| (Num::Float(f), i))
            .map_err(|_| bad());
    }
    if !clean.bytes().all(|c| c.is_ascii_digit()) {
        return Err(bad());
    }
    if clean.len() > 1 && clean.starts_with('0') && clean.bytes().any(|c| c != b'0') {
        return Err((start, "leading zeros in an int literal".into()));
    }
    match clean.parse::<u128>() {
        Ok(v) => Ok((Num::Int(Some(v)), i)),
        Err(_) => Ok((Num::Int(None), i)),
    }
}

/// A single-line Python string literal with the common escapes.
pub fn string(line: &str, start: usize) -> Result<(String, usize), LexErr> {
    let b = line.as_bytes();
    let q = b[start];
    if b.get(start + 1) == Some(&q) && b.get(start + 2) == Some(&q) {
        return Err((start, "triple-quoted strings are not supported".into()));
    }
    let mut out = String::new();
    let mut chars = line[start + 1..].char_indices();
    while let Some((k, c)) = chars.next() {
        let pos = start + 1 + k;
        if out.len() > MAX_STR_LEN {
            return Err((start, "string literal too long".into()));
        }
        match c {
            c if c as u32 == q as u32 => return Ok((out, pos + 1)),
            '\\' => {
                let Some((_, e)) = chars.next() else { break };
                let mut hex = |n: usize| -> Result<char, LexErr> {
                    let mut v = 0u32;
                    for _ in 0..n {
                        let d = chars
                            .next()
                            .and_then(|(_, h)| h.to_digit(16))
                            .ok_or((pos, "truncated escape".to_string()))?;
                        v = v * 16 + d;
                    }
                    char::from_u32(v).ok_or((pos, "invalid code point".to_string()))
                };
                let ch = match e {
                    '\\' => '\\',
                    '\'' => '\'',
                    '"' => '"',
                    'a' => '\x07',
                    'b' => '\x08',
                    'f' => '\x0c',
                    'n' => '\n',
                    'r' => '\r',
                    't' => '\t',
                    'v' => '\x0b',
                    'x' => hex(2)?,
                    'u' => hex(4)?,
                    'U' => hex(8)?,
                    '0'..='7' => {
                        // up to three octal digits
                        let mut v = e as u32 - '0' as u32;
                        for _ in 0..2 {
                            let rest = chars.as_str();
                            match rest.chars().next() {
                                Some(d @ '0'..='7') => {
                                    v = v * 8 + (d as u32 - '0' as u32);
                                    chars.next();
                                }
                                _ => break,
                            }
                        }
                        char::from_u32(v).ok_or((pos, "invalid code point".to_string()))?
                    }
                    _ => return Err((pos, format!("unsupported escape \\{e}"))),
                };
                out.push(ch);
            }
            c => out.push(c),
        }
    }
    Err((start, "unterminated string literal".into()))
}
