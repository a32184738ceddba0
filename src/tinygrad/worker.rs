//! Long-lived tinygrad workers (`harness/worker.py`): one Python process serves many rewrite
//! requests over a pipe, JSON lines in and out, so the ~1 s tinygrad import is paid once per
//! worker, not per graph. Each request has a timeout; a worker that hangs, crashes or writes
//! garbage is killed, the request gets a [`WorkerFailure`] (a value, never a panic or the end of
//! a run) and the next request starts a fresh process.
//!
//! Which tinygrad: the pinned 0.14.0 of the harness venv, or any checkout given as
//! [`WorkerConfig::tinygrad`] (put first on `PYTHONPATH`); the worker reports its version and
//! git revision at start ([`WorkerInfo`]).
use super::{BridgeError, EXIT_NO_TINYGRAD, find_python, harness_script, python_command};
use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Stdio};
use std::sync::Mutex;
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::Duration;

/// How to start a worker.
#[derive(Clone, Debug)]
pub struct WorkerConfig {
    pub python: PathBuf,
    pub script: PathBuf,
    /// A tinygrad checkout (the directory holding the `tinygrad` package), else the venv's.
    pub tinygrad: Option<PathBuf>,
    /// Longest wait for one answer; a worker past it is killed and restarted.
    pub timeout: Duration,
    /// Longest wait for the start line (importing tinygrad).
    pub start_timeout: Duration,
}

impl WorkerConfig {
    /// The harness Python and `harness/worker.py`, checked to exist. Per-request timeout 20 s:
    /// tinygrad's own `REWRITE_STACK_LIMIT` (250,000 entries) stops a looping rewrite of a fuzz
    /// graph in a few seconds, so 20 s means a hang, not a slow graph.
    pub fn new(tinygrad: Option<PathBuf>) -> Result<WorkerConfig, BridgeError> {
        if let Some(t) = &tinygrad
            && !t.join("tinygrad").join("__init__.py").is_file()
        {
            return Err(BridgeError::TinygradMissing {
                python: t.clone(),
                msg: format!("{} holds no tinygrad/__init__.py", t.display()),
            });
        }
        Ok(WorkerConfig {
            python: find_python()?,
            script: harness_script("worker.py")?,
            tinygrad,
            timeout: Duration::from_secs(20),
            start_timeout: Duration::from_secs(60),
        })
    }
}

/// What a worker said about itself at start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkerInfo {
    /// `tinygrad` package version.
    pub version: String,
    /// The package directory it was imported from.
    pub path: String,
    /// `git <sha>` for a git checkout, `PyPI <version>` for the installed distribution's own
    /// files (`installed <version> from <url>` for a local or VCS install), `no git` for a source
    /// tree without `.git` (its version is then the one its `pyproject.toml`/`setup.py` declares).
    pub revision: String,
}

impl WorkerInfo {
    /// One line for reports and repro files.
    pub fn describe(&self) -> String {
        format!(
            "tinygrad {} ({}) at {}",
            self.version, self.revision, self.path
        )
    }
}

/// Why a request got no answer. The worker is restarted for the next one.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WorkerFailure {
    #[error("tinygrad worker did not answer within {0:?}")]
    Timeout(Duration),
    #[error("tinygrad worker died: {0}")]
    Crashed(String),
    #[error("tinygrad worker could not start: {0}")]
    Start(String),
    #[error("tinygrad worker protocol: {0}")]
    Protocol(String),
}

struct Proc {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    stderr: std::sync::Arc<Mutex<String>>,
}

impl Proc {
    fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
    fn last_stderr(&self) -> String {
        let s = self.stderr.lock().map(|s| s.clone()).unwrap_or_default();
        s.lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("(no stderr)")
            .trim()
            .to_string()
    }
}

/// One worker process (started on first use, restarted after a failure).
pub struct Worker {
    cfg: WorkerConfig,
    proc: Option<Proc>,
    info: Option<WorkerInfo>,
    next_id: u64,
    /// Processes started after the first (failures it recovered from).
    pub restarts: u64,
}

impl Worker {
    pub fn new(cfg: WorkerConfig) -> Worker {
        Worker {
            cfg,
            proc: None,
            info: None,
            next_id: 0,
            restarts: 0,
        }
    }

    /// Starts the process if none runs and returns what it reported.
    pub fn info(&mut self) -> Result<WorkerInfo, BridgeError> {
        self.ensure().map_err(|e| match e {
            WorkerFailure::Start(m) if m.starts_with("tinygrad is not importable") => {
                BridgeError::TinygradMissing {
                    python: self.cfg.python.clone(),
                    msg: m,
                }
            }
            e => BridgeError::Protocol(e.to_string()),
        })?;
        self.info
            .clone()
            .ok_or_else(|| BridgeError::Protocol("no start line".into()))
    }

    fn ensure(&mut self) -> Result<(), WorkerFailure> {
        if self.proc.is_some() {
            return Ok(());
        }
        if self.info.is_some() {
            self.restarts += 1;
        }
        let mut cmd = python_command(&self.cfg.python, self.cfg.tinygrad.as_deref())
            .map_err(|e| WorkerFailure::Start(e.to_string()))?;
        cmd.arg(&self.cfg.script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd
            .spawn()
            .map_err(|e| WorkerFailure::Start(format!("{}: {e}", self.cfg.python.display())))?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            let _ = child.kill();
            return Err(WorkerFailure::Start("no pipes".into()));
        };
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let err_buf = std::sync::Arc::new(Mutex::new(String::new()));
        let eb = err_buf.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if let Ok(mut b) = eb.lock() {
                    // keep the tail only: a chatty worker must not grow this without bound
                    if b.len() > 1 << 16 {
                        let cut = b.len() - (1 << 15);
                        let cut = (cut..b.len()).find(|i| b.is_char_boundary(*i)).unwrap_or(0);
                        b.drain(..cut);
                    }
                    b.push_str(&line);
                    b.push('\n');
                }
            }
        });
        let mut p = Proc {
            child,
            stdin,
            lines: rx,
            stderr: err_buf,
        };
        let first = match p.lines.recv_timeout(self.cfg.start_timeout) {
            Ok(l) => l,
            Err(e) => {
                // give stderr's reader a moment to collect the reason
                let status = p.child.wait_timeout_or_kill(Duration::from_secs(2));
                std::thread::sleep(Duration::from_millis(50));
                let why = p.last_stderr();
                p.kill();
                return Err(WorkerFailure::Start(match (e, status) {
                    (_, Some(EXIT_NO_TINYGRAD)) => format!("tinygrad is not importable: {why}"),
                    (RecvTimeoutError::Timeout, _) => {
                        format!("no start line within {:?}", self.cfg.start_timeout)
                    }
                    (_, code) => format!("exited ({code:?}) before its start line: {why}"),
                }));
            }
        };
        let v: Value = serde_json::from_str(&first)
            .map_err(|e| WorkerFailure::Protocol(format!("bad start line {first:?}: {e}")))?;
        let s = |k: &str| v[k].as_str().unwrap_or("?").to_string();
        self.info = Some(WorkerInfo {
            version: s("version"),
            path: s("path"),
            revision: s("revision"),
        });
        let _ = p.child.id();
        self.proc = Some(p);
        Ok(())
    }

    fn fail(&mut self, f: WorkerFailure) -> WorkerFailure {
        if let Some(p) = self.proc.take() {
            let f = match f {
                WorkerFailure::Crashed(m) if m.is_empty() => {
                    WorkerFailure::Crashed(p.last_stderr())
                }
                f => f,
            };
            p.kill();
            return f;
        }
        f
    }

    /// Sends every request (a JSON object; its `id` is set here), then reads the answers in
    /// order. A failure fails that request and every later one of the batch.
    pub fn request_batch(&mut self, reqs: &[Value]) -> Vec<Result<Value, WorkerFailure>> {
        if let Err(e) = self.ensure() {
            return reqs.iter().map(|_| Err(e.clone())).collect();
        }
        let first_id = self.next_id;
        self.next_id += reqs.len() as u64;
        let mut payload = String::new();
        for (k, r) in reqs.iter().enumerate() {
            let mut r = r.clone();
            r["id"] = Value::from(first_id + k as u64);
            payload.push_str(&r.to_string());
            payload.push('\n');
        }
        let mut out: Vec<Result<Value, WorkerFailure>> = Vec::with_capacity(reqs.len());
        // the reader thread drains stdout, so this write cannot deadlock against the answers
        let write = self.proc.as_mut().map(|p| {
            p.stdin
                .write_all(payload.as_bytes())
                .and_then(|_| p.stdin.flush())
        });
        if let Some(Err(e)) = write {
            let f = self.fail(WorkerFailure::Crashed(format!("writing a request: {e}")));
            return reqs.iter().map(|_| Err(f.clone())).collect();
        }
        for k in 0..reqs.len() {
            let Some(p) = &self.proc else {
                break;
            };
            let r = match p.lines.recv_timeout(self.cfg.timeout) {
                Err(RecvTimeoutError::Timeout) => Err(WorkerFailure::Timeout(self.cfg.timeout)),
                Err(RecvTimeoutError::Disconnected) => Err(WorkerFailure::Crashed(String::new())),
                Ok(line) => match serde_json::from_str::<Value>(&line) {
                    Ok(v) if v["id"].as_u64() == Some(first_id + k as u64) => Ok(v),
                    Ok(v) => Err(WorkerFailure::Protocol(format!(
                        "answer for id {} where {} was due",
                        v["id"],
                        first_id + k as u64
                    ))),
                    Err(e) => Err(WorkerFailure::Protocol(format!(
                        "bad answer line {:?}: {e}",
                        line.chars().take(200).collect::<String>()
                    ))),
                },
            };
            match r {
                Ok(v) => out.push(Ok(v)),
                Err(f) => {
                    let f = self.fail(f);
                    out.push(Err(f));
                    break;
                }
            }
        }
        while out.len() < reqs.len() {
            let f = out
                .last()
                .and_then(|r| r.as_ref().err().cloned())
                .unwrap_or(WorkerFailure::Crashed("worker gone".into()));
            out.push(Err(f));
        }
        out
    }

    /// One request.
    pub fn request(&mut self, req: Value) -> Result<Value, WorkerFailure> {
        self.request_batch(std::slice::from_ref(&req))
            .pop()
            .unwrap_or(Err(WorkerFailure::Protocol("no answer".into())))
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        if let Some(mut p) = self.proc.take() {
            // EOF on stdin ends the worker's loop; kill it if it is busy
            let _ = writeln!(p.stdin, "{{\"quit\": 1}}");
            if p.child
                .wait_timeout_or_kill(Duration::from_millis(500))
                .is_none()
            {
                p.kill();
            }
        }
    }
}

trait WaitTimeout {
    /// Waits up to `d` for the exit code; `None` when it is still running (then it is killed).
    fn wait_timeout_or_kill(&mut self, d: Duration) -> Option<i32>;
}

impl WaitTimeout for Child {
    fn wait_timeout_or_kill(&mut self, d: Duration) -> Option<i32> {
        let t = std::time::Instant::now();
        loop {
            match self.try_wait() {
                Ok(Some(s)) => return s.code(),
                Ok(None) if t.elapsed() < d => std::thread::sleep(Duration::from_millis(10)),
                _ => {
                    let _ = self.kill();
                    let _ = self.wait();
                    return None;
                }
            }
        }
    }
}

/// Workers shared by the threads of a run: a thread takes an idle one (or starts one), uses it
/// for a request and puts it back, so a run never has more workers than threads.
pub struct WorkerPool {
    cfg: WorkerConfig,
    idle: Mutex<Vec<Worker>>,
    info: WorkerInfo,
}

impl WorkerPool {
    /// Starts one worker to learn which tinygrad it runs (a missing Python or tinygrad is an
    /// error here, before any run starts).
    pub fn new(cfg: WorkerConfig) -> Result<WorkerPool, BridgeError> {
        let mut w = Worker::new(cfg.clone());
        let info = w.info()?;
        Ok(WorkerPool {
            cfg,
            idle: Mutex::new(vec![w]),
            info,
        })
    }

    pub fn info(&self) -> &WorkerInfo {
        &self.info
    }

    /// Runs `f` with an idle worker.
    pub fn with<T>(&self, f: impl FnOnce(&mut Worker) -> T) -> T {
        let w = self.idle.lock().ok().and_then(|mut v| v.pop());
        let mut w = w.unwrap_or_else(|| Worker::new(self.cfg.clone()));
        let r = f(&mut w);
        if let Ok(mut v) = self.idle.lock() {
            v.push(w);
        }
        r
    }

    /// Runs tinygrad Python repros (`harness/worker.py`'s `script` request) on the pool's
    /// workers in parallel: `(id, verdict)`, the verdict `reproduces`, `does-not-reproduce` or
    /// `error: ...` (the script raised, ran past its timeout, or its worker failed: a failed
    /// worker is restarted for the next script). A script gets the request timeout less 5 s,
    /// so its own timeout answers before the worker is killed.
    pub fn run_scripts(&self, scripts: &[(usize, String)]) -> Vec<(usize, String)> {
        use rayon::prelude::*;
        let secs = self.cfg.timeout.as_secs().saturating_sub(5).max(1);
        scripts
            .par_iter()
            .map(|(id, src)| {
                let req = serde_json::json!({"script": src, "timeout": secs});
                let v = match self.with(|w| w.request(req)) {
                    Ok(v) => match v["verdict"].as_str() {
                        Some(s) => s.to_string(),
                        None => format!("error: tinygrad worker protocol: no verdict in {v}"),
                    },
                    Err(f) => format!("error: {f}"),
                };
                (*id, v)
            })
            .collect()
    }

    /// Restarts over all workers so far.
    pub fn restarts(&self) -> u64 {
        self.idle
            .lock()
            .map(|v| v.iter().map(|w| w.restarts).sum())
            .unwrap_or(0)
    }
}

/// The bridge's workers as the bug list's repro checker (`uopfuzz bugs`): each repro script runs
/// in a long-lived worker, never in a Python of its own.
impl crate::repro::bugs::ReproCheck for WorkerPool {
    fn tinygrad(&self) -> String {
        self.info().describe()
    }
    fn run(&self, scripts: &[(usize, String)]) -> Vec<(usize, String)> {
        self.run_scripts(scripts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in worker (plain Python, no tinygrad): answers `{"id"}` requests with
    /// `{"id", "echo"}`, sleeps on `"sleep"`, exits on `"die"`.
    fn fake(timeout_ms: u64) -> Option<WorkerConfig> {
        let python = ["python3", "/usr/bin/python3"]
            .into_iter()
            .map(PathBuf::from)
            .find(|p| {
                std::process::Command::new(p)
                    .arg("-c")
                    .arg("")
                    .output()
                    .is_ok()
            })?;
        let dir = std::env::temp_dir().join(format!("uopfuzz-fake-worker-{}", std::process::id()));
        std::fs::create_dir_all(&dir).ok()?;
        let script = dir.join("fake_worker.py");
        std::fs::write(
            &script,
            "import sys, json, time\n\
             print(json.dumps({'ready': 1, 'version': 'fake', 'path': '-', 'revision': 'none'}), flush=True)\n\
             for line in sys.stdin:\n\
             \x20 r = json.loads(line)\n\
             \x20 if r.get('quit'): break\n\
             \x20 if r.get('die'): sys.exit(7)\n\
             \x20 if r.get('sleep'): time.sleep(r['sleep'])\n\
             \x20 print(json.dumps({'id': r['id'], 'echo': r.get('x')}), flush=True)\n",
        )
        .ok()?;
        Some(WorkerConfig {
            python,
            script,
            tinygrad: None,
            timeout: Duration::from_millis(timeout_ms),
            start_timeout: Duration::from_secs(20),
        })
    }

    #[test]
    fn crash_and_hang_are_failures_then_restarts() {
        let Some(cfg) = fake(1500) else {
            println!("SKIP crash_and_hang_are_failures_then_restarts: no python3");
            return;
        };
        let mut w = Worker::new(cfg);
        assert_eq!(w.info().unwrap().revision, "none");
        let r = w.request_batch(&[serde_json::json!({"x": 1}), serde_json::json!({"x": 2})]);
        assert_eq!(r[0].as_ref().unwrap()["echo"], 1);
        assert_eq!(r[1].as_ref().unwrap()["echo"], 2);
        // a crash fails its request and the rest of the batch, not the worker's next use
        let r = w.request_batch(&[serde_json::json!({"die": 1}), serde_json::json!({"x": 3})]);
        assert!(matches!(r[0], Err(WorkerFailure::Crashed(_))), "{r:?}");
        assert!(r[1].is_err());
        assert_eq!(w.request(serde_json::json!({"x": 4})).unwrap()["echo"], 4);
        assert_eq!(w.restarts, 1);
        // a hang past the timeout is killed
        let r = w.request(serde_json::json!({"sleep": 30}));
        assert!(matches!(r, Err(WorkerFailure::Timeout(_))), "{r:?}");
        assert_eq!(w.request(serde_json::json!({"x": 5})).unwrap()["echo"], 5);
        assert_eq!(w.restarts, 2);
    }

    #[test]
    fn a_repro_that_cannot_check_is_an_error_not_a_reproduction() {
        if crate::tinygrad::python_for_test("worker: repro verdicts").is_none() {
            return;
        }
        let pool = WorkerPool::new(WorkerConfig::new(None).expect("the harness worker"))
            .expect("a tinygrad worker");
        let scripts = [
            (0, "raise SystemExit(True)".to_string()),
            (1, "raise SystemExit(0)".to_string()),
            (
                2,
                "print('cannot check: the original raises X')\nraise SystemExit(2)".to_string(),
            ),
            (3, "x = 1".to_string()),
        ];
        let v: Vec<String> = pool
            .run_scripts(&scripts)
            .into_iter()
            .map(|(_, v)| v)
            .collect();
        assert_eq!(
            v,
            [
                "reproduces",
                "does-not-reproduce",
                "error: cannot check: the original raises X",
                "does-not-reproduce"
            ]
        );
    }

    #[test]
    fn a_checkout_without_tinygrad_is_a_typed_error() {
        let r = WorkerConfig::new(Some(PathBuf::from("/nonexistent/tinygrad-checkout")));
        assert!(
            matches!(r, Err(BridgeError::TinygradMissing { .. })),
            "{r:?}"
        );
    }
}
