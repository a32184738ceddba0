//! Value parsers the subcommands share (a leaf: the subcommands use it, it uses none of them).

/// Value parser for `--graphs`, `--points`, `--threads`, `--iters`: a count of at least 1. Zero
/// would run nothing and still report success, which a nightly job would read as a clean night.
pub(crate) fn count<T>() -> clap::builder::RangedU64ValueParser<T>
where
    T: TryFrom<u64> + Clone + Send + Sync + 'static,
    <T as TryFrom<u64>>::Error: std::fmt::Display + Send + Sync + 'static,
{
    clap::builder::RangedU64ValueParser::<T>::new().range(1..)
}

/// Value parser for `--time`: seconds, finite and above 0 (`nan` would run forever, silently).
pub(crate) fn seconds(s: &str) -> anyhow::Result<f64> {
    match s.parse::<f64>() {
        Ok(t) if t.is_finite() && t > 0.0 => Ok(t),
        Ok(_) => anyhow::bail!("{s} is not a number of seconds above 0"),
        Err(e) => Err(e.into()),
    }
}
