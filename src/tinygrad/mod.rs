//! The one bridge to real tinygrad (the only code that starts Python): finds the harness Python,
//! runs one harness script as ONE subprocess for a whole batch ([`run_script`]) or keeps
//! long-lived workers that answer rewrite requests ([`worker`]), and turns a missing Python or
//! tinygrad into a typed, one-line error (never a panic). On top of it: `fidelity` (does the
//! port rewrite exactly like tinygrad?), `bench` (how fast, on the same graphs?), `semantics`
//! (tinygrad's `exec_alu` on the semantics table) and `rewriter` (tinygrad as the fuzz loop's
//! rewriter).
//!
//! Stage: a harness over `ir` → … → `oracle` (it also has its own small generator,
//! `builtin_gen`); nothing in the pipeline depends on it: the CLI injects tinygrad into the fuzz
//! loop through the oracle's `Rewriter` trait. The CLI front ends are `src/cli/fidelity.rs`,
//! `src/cli/bench.rs`, `src/cli/semantics.rs` and `src/cli/fuzz.rs` (`--rewriter tinygrad`).
pub mod bench;
pub mod builtin_gen;
pub mod fidelity;
pub mod render_fidelity;
pub mod rewriter;
pub mod semantics;
pub mod worker;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Exit status `harness/*.py` uses when `import tinygrad` fails (anything else is a crash).
pub const EXIT_NO_TINYGRAD: i32 = 3;

/// The tinygrad release the port follows (the spec).
pub const TINYGRAD_VERSION: &str = "0.14.0";

/// Why the bridge could not produce an answer.
#[derive(Debug, thiserror::Error)]
pub enum BridgeError {
    #[error(
        "no harness Python at {0} (set UOPFUZZ_PYTHON or create the venv with scripts/setup.sh)"
    )]
    PythonMissing(PathBuf),
    #[error("no harness script at {0}")]
    ScriptMissing(PathBuf),
    #[error("tinygrad is not importable by {python}: {msg}")]
    TinygradMissing { python: PathBuf, msg: String },
    #[error("{python} imports tinygrad {found}, not {TINYGRAD_VERSION}")]
    WrongVersion { python: PathBuf, found: String },
    #[error("harness {script} failed (exit {code:?}): {msg}")]
    HarnessFailed {
        script: String,
        code: Option<i32>,
        msg: String,
    },
    #[error("harness I/O: {0}")]
    Io(#[from] std::io::Error),
    #[error("harness protocol: {0}")]
    Protocol(String),
    /// A cached [`tinygrad_python`] failure.
    #[error("{0}")]
    Unavailable(std::sync::Arc<BridgeError>),
    #[error("--tinygrad {path}: cannot be put on PYTHONPATH: {msg}")]
    PythonPath { path: PathBuf, msg: String },
}

/// The one way the bridge starts Python: `python` with tinygrad quiet and deterministic (no
/// debug prints, no viz, its default rewrite limits, a fixed hash seed), and `tinygrad` (a
/// checkout: the directory holding the `tinygrad` package) first on `PYTHONPATH`.
pub fn python_command(python: &Path, tinygrad: Option<&Path>) -> Result<Command, BridgeError> {
    let mut cmd = Command::new(python);
    cmd.env_remove("DEBUG")
        .env_remove("VIZ")
        .env_remove("TRACK_MATCH_STATS")
        .env("PYTHONHASHSEED", "0");
    if let Some(t) = tinygrad {
        let mut paths = vec![t.to_path_buf()];
        if let Some(p) = std::env::var_os("PYTHONPATH") {
            paths.extend(std::env::split_paths(&p));
        }
        let joined = std::env::join_paths(paths).map_err(|e| BridgeError::PythonPath {
            path: t.to_path_buf(),
            msg: e.to_string(),
        })?;
        cmd.env("PYTHONPATH", joined);
    }
    Ok(cmd)
}

/// The harness Python, checked to import tinygrad [`TINYGRAD_VERSION`] (one subprocess per
/// process; the answer is cached).
pub fn tinygrad_python() -> Result<PathBuf, BridgeError> {
    use std::sync::OnceLock;
    static ANSWER: OnceLock<Result<PathBuf, std::sync::Arc<BridgeError>>> = OnceLock::new();
    let probe = || -> Result<PathBuf, BridgeError> {
        let python = find_python()?;
        let out = python_command(&python, None)?
            .args([
                "-c",
                "import tinygrad, importlib.metadata as m; print(m.version('tinygrad'))",
            ])
            .output()
            .map_err(|_| BridgeError::PythonMissing(python.clone()))?;
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            let msg = err.lines().last().unwrap_or("import failed").to_string();
            return Err(BridgeError::TinygradMissing { python, msg });
        }
        let found = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if found != TINYGRAD_VERSION {
            return Err(BridgeError::WrongVersion { python, found });
        }
        Ok(python)
    };
    ANSWER
        .get_or_init(|| probe().map_err(std::sync::Arc::new))
        .clone()
        .map_err(BridgeError::Unavailable)
}

/// For a test that compares against real tinygrad: `Some(python)` to run it. Without a usable
/// tinygrad [`TINYGRAD_VERSION`] it panics under CI (CI must run every such test), and
/// elsewhere reports a skip ([`crate::ci::skip_or_fail`]) and returns `None`.
pub fn python_for_test(test: &str) -> Option<PathBuf> {
    let why = match tinygrad_python() {
        Ok(p) => return Some(p),
        Err(e) => e.to_string(),
    };
    crate::ci::skip_or_fail(
        test,
        &format!("needs tinygrad {TINYGRAD_VERSION}: {why}"),
        true,
    );
    None
}

/// The repository root: `UOPFUZZ_ROOT`, else the current directory when it holds
/// `harness/textform.py`, else the checkout this binary was built from.
pub fn repo_root() -> PathBuf {
    if let Some(r) = std::env::var_os("UOPFUZZ_ROOT") {
        return PathBuf::from(r);
    }
    if let Ok(cwd) = std::env::current_dir()
        && cwd.join("harness").join("textform.py").is_file()
    {
        return cwd;
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The harness Python: `UOPFUZZ_PYTHON`, else `<repo>/.venv/bin/python`. Checked to exist.
pub fn find_python() -> Result<PathBuf, BridgeError> {
    let p = match std::env::var_os("UOPFUZZ_PYTHON") {
        Some(p) => PathBuf::from(p),
        None => repo_root().join(".venv").join("bin").join("python"),
    };
    if p.is_file() {
        Ok(p)
    } else {
        Err(BridgeError::PythonMissing(p))
    }
}

/// `<repo>/harness/<name>`, checked to exist.
pub fn harness_script(name: &str) -> Result<PathBuf, BridgeError> {
    let p = repo_root().join("harness").join(name);
    if p.is_file() {
        Ok(p)
    } else {
        Err(BridgeError::ScriptMissing(p))
    }
}

/// Runs `python <script> <args...>` once, feeding `stdin` (written from a thread so a large batch
/// cannot deadlock against a full stdout pipe) and returning its stdout. Exit status
/// [`EXIT_NO_TINYGRAD`] becomes [`BridgeError::TinygradMissing`], any other failure
/// [`BridgeError::HarnessFailed`] with the last stderr line.
pub fn run_script(
    python: &Path,
    script: &Path,
    args: &[String],
    stdin: Vec<u8>,
) -> Result<String, BridgeError> {
    let mut child = python_command(python, None)?
        .arg(script)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied => {
                BridgeError::PythonMissing(python.to_path_buf())
            }
            _ => BridgeError::Io(e),
        })?;
    let mut pipe = child
        .stdin
        .take()
        .ok_or_else(|| BridgeError::Protocol("no stdin pipe".into()))?;
    let writer = std::thread::spawn(move || {
        // a harness that dies early closes its stdin: the exit status tells why, not EPIPE
        let _ = pipe.write_all(&stdin);
    });
    let out = child.wait_with_output()?;
    let _ = writer.join();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let last = stderr
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
        .to_string();
    let name = script
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    match out.status.code() {
        Some(0) => String::from_utf8(out.stdout)
            .map_err(|e| BridgeError::Protocol(format!("{name} wrote non-UTF-8 output: {e}"))),
        Some(EXIT_NO_TINYGRAD) => Err(BridgeError::TinygradMissing {
            python: python.to_path_buf(),
            msg: last,
        }),
        code => Err(BridgeError::HarnessFailed {
            script: name,
            code,
            msg: last,
        }),
    }
}

/// The Python exception (class, message) a port rule error stands for, so both sides compare by
/// class name. Porters write exceptions without a variant of their own (OverflowError,
/// TypeError, IndexError, AssertionError, ...) as `RuleError::Runtime("Class: message")`.
pub fn port_error(e: &crate::rewrite::RuleError) -> (String, String) {
    use crate::rewrite::RuleError as E;
    match e {
        E::ZeroDivision(m) => ("ZeroDivisionError".into(), m.clone()),
        E::Value(m) => ("ValueError".into(), m.clone()),
        E::Runtime(m) => match m.split_once(": ") {
            Some((cls, rest))
                if (cls.ends_with("Error") || cls.ends_with("Exception"))
                    && cls.chars().all(|c| c.is_ascii_alphanumeric()) =>
            {
                (cls.to_string(), rest.to_string())
            }
            _ => ("RuntimeError".into(), m.clone()),
        },
        // not a Python exception: the port left its i128 range
        E::Overflow(m) => ("PortOverflow".into(), m.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rewrite::RuleError as E;

    #[test]
    fn port_error_classes() {
        let c = |e: E| port_error(&e);
        assert_eq!(c(E::ZeroDivision("x".into())).0, "ZeroDivisionError");
        assert_eq!(
            c(E::Runtime(
                "OverflowError: cannot convert float infinity to integer".into()
            )),
            (
                "OverflowError".to_string(),
                "cannot convert float infinity to integer".to_string()
            )
        );
        assert_eq!(c(E::Runtime("infinite loop: x".into())).0, "RuntimeError");
        assert_eq!(c(E::Overflow("big".into())).0, "PortOverflow");
    }

    #[test]
    fn missing_python_is_a_typed_error() {
        let r = run_script(
            Path::new("/nonexistent/uopfuzz/python"),
            Path::new("/nonexistent/script.py"),
            &[],
            Vec::new(),
        );
        assert!(matches!(r, Err(BridgeError::PythonMissing(_))), "{r:?}");
    }
}
