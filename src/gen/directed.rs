//! Pattern-directed generation (placeholder while the grammar is brought up).
use super::{GenConfig, Generated, Source};
use crate::rewrite::UPat;

pub fn generate_for_pattern(_src: &mut dyn Source, _pat: &UPat, _cfg: &GenConfig) -> Option<Generated> {
    None
}
