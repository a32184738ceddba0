//! Analyses the rules read: `_min_max` (vmin/vmax), `const_factor`, `divides`, `split_uop`, ...
//! Cached per node (nodes are immutable, so a cache entry never goes stale).
use crate::ir::{ConstVal, UOp};
use std::collections::HashMap;

#[derive(Default, Debug)]
pub struct Cache {
    pub min_max: HashMap<UOp, (ConstVal, ConstVal)>,
}
