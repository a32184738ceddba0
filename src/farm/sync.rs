//! `--sync DIR`: farms exchange findings and corpus through a shared directory, AFL++-style.
//! Each farm writes only `DIR/<its id>/{findings,corpus}/` (its own finds, never what it
//! imported) and reads every other farm's folder. Exports are published with the same atomic
//! rename as local findings, so a reader never sees half a finding; what was exchanged is
//! remembered in `state.json` (`synced`), so nothing is copied twice across restarts.
use super::store::{self, FarmMeta, Layout, State};
use std::path::Path;

/// What one exchange moved.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Moved {
    pub exported: u64,
    pub imported_findings: u64,
    pub imported_corpus: u64,
}

fn copy_dir(src: &Path, dst: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dst)?;
    for e in std::fs::read_dir(src)?.flatten() {
        if e.path().is_file() {
            std::fs::copy(e.path(), dst.join(e.file_name()))?;
        }
    }
    Ok(())
}

fn names(dir: &Path, want_dirs: bool) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.path().is_dir() == want_dirs)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| !n.starts_with('.'))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// One exchange: export this farm's new finds, import the other farms'.
pub fn exchange(l: &Layout, sync: &Path, st: &mut State) -> std::io::Result<Moved> {
    let mut m = Moved::default();
    let own = sync.join(&st.farm_id);
    let own_tmp = own.join(".tmp");
    std::fs::create_dir_all(own.join("findings"))?;
    std::fs::create_dir_all(own.join("corpus"))?;
    let _ = std::fs::remove_dir_all(&own_tmp);
    std::fs::create_dir_all(&own_tmp)?;
    for name in store::finding_names(l) {
        let key = format!("out/findings/{name}");
        if st.synced.contains(&key) {
            continue;
        }
        let src = l.findings().join(&name);
        let Some(f) = store::read_filed(&src) else {
            continue;
        };
        if f.meta.synced_from.is_none() {
            let tmp = own_tmp.join(&name);
            copy_dir(&src, &tmp)?;
            store::publish_dir(&tmp, &own.join("findings").join(&name))?;
            m.exported += 1;
        }
        st.synced.insert(key);
    }
    for name in names(&l.corpus(), false) {
        let key = format!("out/corpus/{name}");
        if st.synced.contains(&key) {
            continue;
        }
        let dst = own.join("corpus").join(&name);
        if !dst.exists() {
            store::write_entry(&dst, &std::fs::read(l.corpus().join(&name))?)?;
            m.exported += 1;
        }
        st.synced.insert(key);
    }
    for other in names(sync, true) {
        if other == st.farm_id {
            continue;
        }
        let theirs = sync.join(&other);
        for name in names(&theirs.join("findings"), true) {
            let key = format!("in/{other}/findings/{name}");
            if st.synced.contains(&key) {
                continue;
            }
            let dest = l.findings().join(&name);
            if !dest.exists() {
                let tmp = l.tmp().join(format!("sync-{name}"));
                let _ = std::fs::remove_dir_all(&tmp);
                copy_dir(&theirs.join("findings").join(&name), &tmp)?;
                let mut meta: FarmMeta = std::fs::read_to_string(tmp.join("farm.json"))
                    .ok()
                    .and_then(|t| serde_json::from_str(&t).ok())
                    .unwrap_or_default();
                meta.synced_from = Some(other.clone());
                std::fs::write(
                    tmp.join("farm.json"),
                    serde_json::to_string_pretty(&meta).unwrap_or_default(),
                )?;
                if store::publish_dir(&tmp, &dest)? {
                    m.imported_findings += 1;
                }
            }
            st.synced.insert(key);
        }
        for name in names(&theirs.join("corpus"), false) {
            let key = format!("in/{other}/corpus/{name}");
            if st.synced.contains(&key) {
                continue;
            }
            let dst = l.corpus().join(&name);
            if !dst.exists() {
                store::write_entry(&dst, &std::fs::read(theirs.join("corpus").join(&name))?)?;
                m.imported_corpus += 1;
            }
            // the imported entry is not exported again
            st.synced.insert(format!("out/corpus/{name}"));
            st.synced.insert(key);
        }
    }
    Ok(m)
}
