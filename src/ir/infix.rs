//! A compact infix form of an expression (`((v0 // -3) // -3)`), for one-line summaries of
//! findings and witnesses; the text form (`text.rs`) is the exact, parseable one.
use super::alu::Val;
use super::{Arg, DType, Graph, Ops, UOp};

/// A compact infix form of the expression under `u` (shared nodes repeated, depth-capped).
pub fn infix(g: &Graph, u: UOp) -> String {
    fn go(g: &Graph, u: UOp, depth: usize, out: &mut String) {
        if depth > 12 || out.len() > 600 {
            out.push('…');
            return;
        }
        let n = g.node(u);
        let sym = match n.op {
            Ops::ADD => Some("+"),
            Ops::SUB => Some("-"),
            Ops::MUL => Some("*"),
            Ops::FLOORDIV => Some("//"),
            Ops::FLOORMOD => Some("%"),
            Ops::CMPLT => Some("<"),
            Ops::CMPNE => Some("!="),
            Ops::CMPEQ => Some("=="),
            Ops::AND => Some("&"),
            Ops::OR => Some("|"),
            Ops::XOR => Some("^"),
            Ops::SHL => Some("<<"),
            Ops::SHR => Some(">>"),
            _ => None,
        };
        match (n.op, &n.arg) {
            (Ops::CONST, Arg::Const(c)) => {
                let v = Val::from_const(*c)
                    .map(|v| v.py_repr())
                    .unwrap_or("Invalid".into());
                out.push_str(&v);
                if !n.dtype.is_weak() && n.dtype != DType::Bool {
                    out.push(':');
                    out.push_str(n.dtype.py_name());
                }
                return;
            }
            (Ops::BUFFER | Ops::PARAM, Arg::Param(p)) if p.name.is_some() => {
                out.push_str(p.name.as_deref().unwrap_or("?"));
                return;
            }
            (Ops::RANGE, Arg::Range(a, _)) => {
                out.push_str(&format!("ridx{a}"));
                return;
            }
            (Ops::SPECIAL, Arg::Name(s)) => {
                out.push_str(s);
                return;
            }
            _ => {}
        }
        if let (Some(s), 2) = (sym, n.src.len()) {
            out.push('(');
            go(g, n.src[0], depth + 1, out);
            out.push_str(&format!(" {s} "));
            go(g, n.src[1], depth + 1, out);
            out.push(')');
            return;
        }
        match n.op {
            Ops::CAST | Ops::BITCAST => out.push_str(&format!(
                "{}<{}>(",
                n.op.name().to_lowercase(),
                n.dtype.py_name()
            )),
            o => out.push_str(&format!("{}(", o.name().to_lowercase())),
        }
        for (i, s) in n.src.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            go(g, *s, depth + 1, out);
        }
        out.push(')');
    }
    let mut s = String::new();
    go(g, u, 0, &mut s);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn infix_prints_binary_ops_consts_and_casts() {
        let mut g = Graph::new();
        let v = g.variable("v0", -16, 16, DType::WeakInt);
        let c = g.cint(DType::WeakInt, -3);
        let d = g.alu(Ops::FLOORDIV, &[v, c]).unwrap();
        let d2 = g.alu(Ops::FLOORDIV, &[d, c]).unwrap();
        assert_eq!(infix(&g, d2), "((v0 // -3) // -3)");
        let k = g.cint(DType::Int64, 9);
        let m = g.alu(Ops::MAX, &[k, k]).unwrap();
        assert_eq!(infix(&g, m), "max(9:long, 9:long)");
    }
}
