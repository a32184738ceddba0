//! Dedup: findings with the same [`Signature`] (class, blamed rule, dtype family, backend) are one
//! root cause. Each bucket counts its findings and keeps the smallest repro by node count; ties
//! go to the smaller label (a path), so the kept repro does not depend on the order findings
//! arrive in.
use crate::oracle::verdict::Signature;
use std::collections::BTreeMap;

/// One root cause.
#[derive(Clone, Debug, PartialEq)]
pub struct Bucket<T> {
    pub signature: Signature,
    /// Findings seen with this signature.
    pub count: usize,
    /// The smallest of them.
    pub best: T,
    pub best_nodes: usize,
    pub best_label: String,
}

/// Buckets by signature, iterated in signature order.
#[derive(Clone, Debug)]
pub struct Dedup<T> {
    buckets: BTreeMap<Signature, Bucket<T>>,
}

impl<T> Default for Dedup<T> {
    fn default() -> Self {
        Dedup {
            buckets: BTreeMap::new(),
        }
    }
}

impl<T> Dedup<T> {
    pub fn new() -> Dedup<T> {
        Dedup::default()
    }
    /// Adds one finding of `nodes` nodes, labelled `label` (e.g. its path). Returns whether it
    /// became its bucket's kept repro.
    pub fn add(&mut self, sig: Signature, nodes: usize, label: &str, item: T) -> bool {
        match self.buckets.get_mut(&sig) {
            None => {
                self.buckets.insert(
                    sig.clone(),
                    Bucket {
                        signature: sig,
                        count: 1,
                        best: item,
                        best_nodes: nodes,
                        best_label: label.to_string(),
                    },
                );
                true
            }
            Some(b) => {
                b.count += 1;
                if (nodes, label) < (b.best_nodes, b.best_label.as_str()) {
                    b.best = item;
                    b.best_nodes = nodes;
                    b.best_label = label.to_string();
                    true
                } else {
                    false
                }
            }
        }
    }
    pub fn len(&self) -> usize {
        self.buckets.len()
    }
    pub fn is_empty(&self) -> bool {
        self.buckets.is_empty()
    }
    /// Total findings added.
    pub fn total(&self) -> usize {
        self.buckets.values().map(|b| b.count).sum()
    }
    pub fn buckets(&self) -> impl Iterator<Item = &Bucket<T>> {
        self.buckets.values()
    }
    pub fn into_buckets(self) -> Vec<Bucket<T>> {
        self.buckets.into_values().collect()
    }
    pub fn get(&self, sig: &Signature) -> Option<&Bucket<T>> {
        self.buckets.get(sig)
    }
}

/// The dtype family a signature names for a dtype (`weakint`, `int`, `uint`, `float`, `bool`),
/// for callers that build signatures.
pub fn dtype_family(dt: crate::ir::DType) -> &'static str {
    use crate::ir::DType;
    match dt {
        DType::WeakInt => "weakint",
        DType::Bool => "bool",
        DType::Void => "kernel",
        d if d.is_unsigned() => "uint",
        d if d.is_int() => "int",
        _ => "float",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oracle::verdict::Class;
    fn sig(rule: &str) -> Signature {
        Signature {
            class: Class::RewriteBug,
            rule: rule.into(),
            dtype: "int".into(),
            backend: "interp".into(),
        }
    }
    #[test]
    fn keeps_smallest_and_is_order_independent() {
        let items = [(9, "c"), (3, "b"), (3, "a"), (7, "d")];
        let mut fwd = Dedup::new();
        let mut rev = Dedup::new();
        for (n, l) in items {
            fwd.add(sig("r"), n, l, l.to_string());
        }
        for (n, l) in items.iter().rev() {
            rev.add(sig("r"), *n, l, l.to_string());
        }
        for d in [&fwd, &rev] {
            let b = d.get(&sig("r")).unwrap();
            assert_eq!((b.count, b.best_nodes, b.best.as_str()), (4, 3, "a"));
        }
        assert_eq!(fwd.len(), 1);
        assert_eq!(dtype_family(crate::ir::DType::UInt8), "uint");
        assert_eq!(dtype_family(crate::ir::DType::Half), "float");
        assert_eq!(dtype_family(crate::ir::DType::Int32), "int");
    }
}
