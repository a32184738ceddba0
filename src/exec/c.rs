//! The `c` and `c-strict` backends: tinygrad's C as `ClangRenderer` renders it (`exec::render`),
//! compiled by the system `clang` and run in a long-lived worker process.
//!
//! * `c`: exactly `ClangCompiler`'s flags (runtime/support/compiler_cpu.py:10, :21-22; see
//!   [`CLANG_FLAGS`]): no `-fwrapv` (signed overflow and `x<<k` of a negative `x` are UB clang may
//!   exploit) and clang's default `-ffp-contract=on` (`a*b+c` within one expression may fuse).
//! * `c-strict`: the same source with `-fwrapv -ffp-contract=off` appended: it separates "clang
//!   exploited UB in tinygrad's C" (`c` differs, `c-strict` agrees) from renderer bugs.
//!
//! Many graphs go into one translation unit ([`Backend::prepare_many`]): compiled to an object
//! with tinygrad's flags (`-c`), linked with a small entry TU into one shared object. The worker
//! (a C program built once per process) `dlopen`s it and calls one kernel per request line, all
//! points of a run sent before their answers are read. `x/0` and `INT_MIN/-1` (SIGFPE) are
//! trapped in the worker and answered as `ExecError::Crash`; another signal or a hang ends the
//! worker, not the fuzzer: that point is a `Crash`/`Timeout` and a fresh worker takes the rest.
//!
//! Rules where the reference leaves a point undefined (the oracle skips those points anyway):
//! division by zero and `INT_MIN/-1` trap (x86 `idiv`); float→int out of range gives x86's
//! "integer indefinite"; shift counts ≥ width give whatever `shl`/`sar` make of them.
//!
//! A kernel graph's buffers are passed as pointers to the point's buffers (their bytes as
//! `kernel_io::encode` lays them out), and those it stores to come back as its result.
//!
//! Outside what tinygrad's C can be on this machine (a value, [`Unsupported`]): bfloat16
//! (clang 14 has no `__bf16` on x86_64), THREEFRY, fp8.
use super::backend::{
    Backend, Capabilities, ExecError, Observed, Prepared, Support, Unavailable, Unsupported,
};
use super::interp::Env;
use super::kernel_io;
use super::render::clang::{CLANG_FLAGS, ClangRenderer};
use super::render::lower::{Kernel, lower};
use super::render::{CStyleLanguage, CannotRender, linearize};
use crate::ir::{DType, Graph, Ops, UOp};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// Bytes of request lines sent to a worker before reading their answers: under Linux's 64 KiB
/// pipe buffer, so writing never blocks on the worker.
const PIPE_BATCH: usize = 32 * 1024;

/// The flags `c-strict` adds to tinygrad's.
pub const STRICT_FLAGS: &[&str] = &["-fwrapv", "-ffp-contract=off"];

/// Wall-clock limit of one kernel call in the worker. Scalar kernels are straight-line code
/// and generated kernels loop a few thousand times at most, so a call takes microseconds to
/// milliseconds; the limit only has to tell a hang from a busy machine.
const CALL_TIMEOUT: Duration = Duration::from_secs(5);

/// The `c` backend (`strict = false`) or `c-strict`.
pub struct C {
    pub strict: bool,
}

impl C {
    pub fn ub_exploiting() -> C {
        C { strict: false }
    }
    pub fn strict() -> C {
        C { strict: true }
    }
    fn flags(&self) -> Vec<&'static str> {
        let mut f: Vec<&'static str> = CLANG_FLAGS.to_vec();
        if self.strict {
            f.extend(STRICT_FLAGS);
        }
        f
    }
}

/// `$CC` or `clang`, as `ClangCompiler` picks it (compiler_cpu.py:21).
pub fn cc() -> String {
    std::env::var("CC")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "clang".into())
}

/// Whether the compiler runs here (checked once).
pub fn clang_available() -> Result<(), Unavailable> {
    static R: OnceLock<Result<(), Unavailable>> = OnceLock::new();
    R.get_or_init(|| match Command::new(cc()).arg("--version").output() {
        Ok(o) if o.status.success() => Ok(()),
        Ok(o) => Err(Unavailable(format!(
            "`{} --version` exited with {}",
            cc(),
            o.status
        ))),
        Err(e) => Err(Unavailable(format!(
            "no C compiler: `{}` cannot run ({e}); install clang",
            cc()
        ))),
    })
    .clone()
}

/// Why a compiler run produced nothing.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CcError {
    #[error("cannot run {cc}: {err}")]
    Spawn { cc: String, err: String },
    /// Feeding the source, reading the output, or writing a file beside it failed.
    #[error("{0}")]
    Io(String),
    /// The compiler refused: the first lines of what it printed (`errors`: its `error:` lines,
    /// all of them).
    #[error("{first}")]
    Rejected { first: String, errors: Vec<String> },
}

fn capabilities() -> &'static Capabilities {
    static CAPS: OnceLock<Capabilities> = OnceLock::new();
    CAPS.get_or_init(|| {
        let all: Vec<DType> = DType::ALL.to_vec();
        let floats = [DType::Half, DType::Float, DType::Double, DType::WeakFloat];
        Capabilities::all(Support::Runs)
            // not in ClangRenderer.code_for_op: decomposed first (decomp/op.py, transcendental.py)
            .with(
                &[Ops::EXP2, Ops::LOG2, Ops::SIN, Ops::POW],
                &floats,
                Support::LoweredFirst,
            )
            .with(
                &[Ops::RECIPROCAL, Ops::MAX, Ops::FLOORDIV, Ops::FLOORMOD],
                &all,
                Support::LoweredFirst,
            )
            .with(Ops::ALL, &[DType::BFloat16], Support::Unsupported)
            .with(Ops::ALL, DType::FP8S, Support::Unsupported)
            .with(&[Ops::THREEFRY, Ops::MULACC], &all, Support::Unsupported)
    })
}

impl Backend for C {
    fn name(&self) -> &'static str {
        if self.strict { "c-strict" } else { "c" }
    }
    fn capabilities(&self) -> &Capabilities {
        capabilities()
    }
    fn available(&self) -> Result<(), Unavailable> {
        clang_available()
    }
    fn strict_twin(&self) -> Option<&'static str> {
        if self.strict { None } else { Some("c-strict") }
    }
    fn prepare<'g>(
        &self,
        g: &'g Graph,
        roots: &[UOp],
    ) -> Result<Box<dyn Prepared + 'g>, Unsupported> {
        self.prepare_many(&[(g, roots)]).pop().unwrap_or_else(|| {
            Err(Unsupported {
                reason: "nothing prepared".into(),
            })
        })
    }
    fn prepare_many<'g>(
        &self,
        jobs: &[(&'g Graph, &[UOp])],
    ) -> Vec<Result<Box<dyn Prepared + 'g>, Unsupported>> {
        // a job's several kernel roots are lowered apart, each on its own copy of the buffers
        let mut tasks: Vec<(usize, Vec<UOp>)> = Vec::new();
        for (j, (g, roots)) in jobs.iter().enumerate() {
            if kernel_io::several_kernels(g, roots) {
                tasks.extend(roots.iter().map(|r| (j, vec![*r])));
            } else {
                tasks.push((j, roots.to_vec()));
            }
        }
        let rendered: Vec<Result<CKernel, Unsupported>> = tasks
            .iter()
            .map(|(j, roots)| render_kernel(jobs[*j].0, roots))
            .collect();
        let ok: Vec<&CKernel> = rendered.iter().filter_map(|r| r.as_ref().ok()).collect();
        let lib = compile_batch(&ok, &self.flags());
        let mut i = 0usize;
        let mut per_job: Vec<Vec<Result<Box<dyn Prepared + 'g>, Unsupported>>> =
            jobs.iter().map(|_| Vec::new()).collect();
        for ((j, _), r) in tasks.iter().zip(rendered) {
            per_job[*j].push(r.map(|k| {
                let lib = match &lib {
                    Ok(libs) => libs[i].clone(),
                    Err(e) => Err(e.clone()),
                };
                i += 1;
                Box::new(CPrepared { kernel: k, lib }) as Box<dyn Prepared + 'g>
            }));
        }
        per_job
            .into_iter()
            .map(|mut each| {
                if each.len() == 1
                    && let Some(one) = each.pop()
                {
                    return one;
                }
                let each = each.into_iter().collect::<Result<Vec<_>, _>>()?;
                Ok(Box::new(kernel_io::PerRoot(each)) as Box<dyn Prepared + 'g>)
            })
            .collect()
    }
}

/// A kernel rendered as tinygrad's C, with its parameters.
#[derive(Clone, Debug)]
pub struct CKernel {
    /// `ClangRenderer`'s source for the kernel, function named `test` as tinygrad names it
    /// without a `KernelInfo`.
    pub source: String,
    pub params: Vec<super::render::lower::KernelParam>,
    pub nroots: usize,
}

/// Lowers and renders `roots` of `g` as tinygrad's C (`Unsupported` when it cannot be).
pub fn render_kernel(g: &Graph, roots: &[UOp]) -> Result<CKernel, Unsupported> {
    lower_and_render(g, roots).map(|(_, k)| k)
}

/// [`render_kernel`] that also hands back the lowered kernel the source was rendered from.
pub fn lower_and_render(g: &Graph, roots: &[UOp]) -> Result<(Kernel, CKernel), Unsupported> {
    capabilities().check(g, roots)?;
    let k: Kernel = lower(&ClangRenderer, g, roots).map_err(|e| Unsupported { reason: e.0 })?;
    if let Some(u) = k
        .graph
        .toposort(&[k.sink])
        .into_iter()
        .find(|u| k.graph.dtype(*u) == DType::BFloat16)
    {
        return Err(Unsupported {
            reason: format!(
                "bfloat16 after lowering (node {u:?}): clang 14 has no __bf16 on x86_64"
            ),
        });
    }
    let source = render_source(&k).map_err(|e| Unsupported { reason: e.0 })?;
    let ck = CKernel {
        source,
        params: k.params.clone(),
        nroots: roots.len(),
    };
    Ok((k, ck))
}

/// Compiles already rendered kernels (one shared object for all) for [`Prepared::run`]: the
/// way `uopfuzz fidelity --renderer clang` runs tinygrad's own source beside the port's.
pub fn prepare_sources(kernels: Vec<CKernel>, strict: bool) -> Vec<Box<dyn Prepared>> {
    let be = if strict {
        C::strict()
    } else {
        C::ub_exploiting()
    };
    let refs: Vec<&CKernel> = kernels.iter().collect();
    let libs = compile_batch(&refs, &be.flags());
    kernels
        .into_iter()
        .enumerate()
        .map(|(i, kernel)| {
            let lib = match &libs {
                Ok(l) => l[i].clone(),
                Err(e) => Err(e.clone()),
            };
            Box::new(CPrepared { kernel, lib }) as Box<dyn Prepared>
        })
        .collect()
}

/// `ren.render(line_rewrite(linearize(sink), pm_linearize_cleanups))` (renderers.md §3).
pub fn render_source(k: &Kernel) -> Result<String, CannotRender> {
    let mut g = k.graph.clone();
    let lst = linearize::linearize(&g, k.sink);
    let lst = linearize::linearize_cleanups(&mut g, &lst);
    ClangRenderer.render(&g, &lst)
}

/// The C type of a parameter as the kernel declares it (`ClangRenderer.type_map`).
fn ctype(dt: DType) -> &'static str {
    ClangRenderer.type_map(dt).unwrap_or(dt.cname())
}

/// The entry TU's wrapper for kernel `name`: `void e_name(void **a)` calls it with every
/// parameter taken from `a` (pointers as they are, values dereferenced).
fn entry_wrapper(name: &str, k: &CKernel) -> String {
    let decl: Vec<String> = k
        .params
        .iter()
        .map(|p| {
            if p.pointer {
                format!("{}*", ctype(p.dtype))
            } else {
                format!("const {}", ctype(p.dtype))
            }
        })
        .collect();
    let call: Vec<String> = k
        .params
        .iter()
        .enumerate()
        .map(|(i, p)| {
            if p.pointer {
                format!("({}*)a[{i}]", ctype(p.dtype))
            } else {
                format!("*(const {}*)a[{i}]", ctype(p.dtype))
            }
        })
        .collect();
    format!(
        "void {name}({});\nvoid e_{name}(void **a) {{ {name}({}); }}\n",
        decl.join(", "),
        call.join(", ")
    )
}

/// A compiled shared object; removed with its directory when the last kernel using it goes.
struct Lib {
    path: PathBuf,
    dir: PathBuf,
}

impl Drop for Lib {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

type LibRef = Result<(Arc<Lib>, String), ExecError>;

fn scratch_dir() -> PathBuf {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    std::env::temp_dir().join(format!("uopfuzz-c-{}-{n}", std::process::id()))
}

fn run_cc(args: &[&str], input: Option<&str>, cwd: &Path) -> Result<(), CcError> {
    spawn_cc(args, input, cwd).and_then(wait_cc)
}

/// Starts the compiler on `args` (feeding it `input`) without waiting for it.
fn spawn_cc(args: &[&str], input: Option<&str>, cwd: &Path) -> Result<Child, CcError> {
    let mut cmd = Command::new(cc());
    cmd.args(args)
        .current_dir(cwd)
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(|e| CcError::Spawn {
        cc: cc(),
        err: e.to_string(),
    })?;
    if let (Some(src), Some(mut stdin)) = (input, child.stdin.take()) {
        stdin
            .write_all(src.as_bytes())
            .map_err(|e| CcError::Io(format!("writing the source: {e}")))?;
    }
    Ok(child)
}

/// Waits for a compiler started by [`spawn_cc`]: what it printed when it failed.
fn wait_cc(child: Child) -> Result<(), CcError> {
    let out = child
        .wait_with_output()
        .map_err(|e| CcError::Io(e.to_string()))?;
    if out.status.success() {
        Ok(())
    } else {
        let err = String::from_utf8_lossy(&out.stderr);
        Err(CcError::Rejected {
            first: err.lines().take(6).collect::<Vec<_>>().join("\n"),
            errors: err
                .lines()
                .filter(|l| l.contains(": error:"))
                .map(str::to_string)
                .collect(),
        })
    }
}

/// Compiles `kernels` into one shared object: tinygrad's flags on the kernels' TU (source on
/// stdin, as `ClangCompiler.compile` feeds it), the entry wrappers apart, then `-shared`. A
/// batch that fails to compile loses the kernel clang's first error lies in (compiled alone, so
/// its message does not depend on the batch) and compiles again; where no error names a
/// kernel, it is split in halves until each failing kernel stands alone. One bad kernel costs
/// only its own result.
fn compile_batch(kernels: &[&CKernel], flags: &[&str]) -> Result<Vec<LibRef>, ExecError> {
    if kernels.is_empty() {
        return Ok(Vec::new());
    }
    let dir = scratch_dir();
    std::fs::create_dir_all(&dir).map_err(|e| ExecError::Compile {
        what: format!("{}: {e}", dir.display()),
    })?;
    let names: Vec<String> = (0..kernels.len()).map(|i| format!("k{i}")).collect();
    let mut src = String::new();
    let mut entry = String::new();
    // the first source line of each kernel (1-based), to tell whose lines clang rejects
    let mut first_line: Vec<usize> = Vec::with_capacity(kernels.len());
    let mut line = 1;
    for (k, name) in kernels.iter().zip(&names) {
        first_line.push(line);
        // the renderer names every kernel `test` (no KernelInfo); the batch renames each
        let text = k.source.replacen("void test(", &format!("void {name}("), 1);
        line += text.matches('\n').count();
        src.push_str(&text);
        if !text.ends_with('\n') {
            src.push('\n');
            line += 1;
        }
        entry.push_str(&entry_wrapper(name, k));
    }
    let mut args: Vec<&str> = flags.to_vec();
    args.extend(["-", "-o", "kernels.o"]);
    // the entry wrappers compile beside the kernels (another process), then both link
    let entry_cc = std::fs::write(dir.join("entry.c"), &entry)
        .map_err(|e| CcError::Io(e.to_string()))
        .and_then(|_| {
            spawn_cc(
                &["-c", "-O1", "-fPIC", "entry.c", "-o", "entry.o"],
                None,
                &dir,
            )
        });
    let compiled = run_cc(&args, Some(&src), &dir);
    let res = compiled
        .clone()
        .and(entry_cc.and_then(wait_cc))
        .and_then(|_| {
            run_cc(
                &["-shared", "kernels.o", "entry.o", "-o", "lib.so"],
                None,
                &dir,
            )
        });
    match res {
        Ok(()) => {
            let lib = Arc::new(Lib {
                path: dir.join("lib.so"),
                dir,
            });
            Ok(names
                .into_iter()
                .map(|n| Ok((lib.clone(), format!("e_{n}"))))
                .collect())
        }
        Err(e) => {
            let _ = std::fs::remove_dir_all(&dir);
            if kernels.len() == 1 {
                return Ok(vec![Err(ExecError::Compile {
                    what: e.to_string(),
                })]);
            }
            // the kernels clang's errors point into are compiled alone (their message is then
            // what it is in any batch), the others together again
            if let Err(CcError::Rejected { errors, .. }) = &compiled {
                // the first error only: a kernel with an unbalanced brace makes every kernel
                // after it an error too, the next one first, at its definition
                let mut bad = vec![false; kernels.len()];
                if let Some(err) = errors.first() {
                    let at = err
                        .strip_prefix("<stdin>:")
                        .and_then(|r| r.split(':').next())
                        .and_then(|n| n.parse::<usize>().ok());
                    if let Some(l) = at {
                        let mut k = first_line.partition_point(|f| *f <= l).saturating_sub(1);
                        if err.contains("function definition is not allowed here") {
                            k = k.saturating_sub(1);
                        }
                        bad[k] = true;
                    }
                }
                let nbad = bad.iter().filter(|b| **b).count();
                if nbad > 0 && nbad < kernels.len() {
                    let rest: Vec<&CKernel> = kernels
                        .iter()
                        .zip(&bad)
                        .filter(|(_, b)| !**b)
                        .map(|(k, _)| *k)
                        .collect();
                    let mut rest = compile_batch(&rest, flags)?.into_iter();
                    let mut out = Vec::with_capacity(kernels.len());
                    for (k, b) in kernels.iter().zip(&bad) {
                        if *b {
                            out.extend(compile_batch(&[*k], flags)?);
                        } else {
                            out.extend(rest.next());
                        }
                    }
                    return Ok(out);
                }
            }
            // otherwise halves, until each failing kernel stands alone
            let (a, b) = kernels.split_at(kernels.len() / 2);
            let mut out = compile_batch(a, flags)?;
            out.extend(compile_batch(b, flags)?);
            Ok(out)
        }
    }
}

struct CPrepared {
    kernel: CKernel,
    lib: LibRef,
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok())
        .collect()
}

impl Prepared for CPrepared {
    fn run(&mut self, points: &[&Env]) -> Vec<Vec<Observed>> {
        let nroots = self.kernel.nroots;
        let fail = |e: ExecError| vec![Observed::failed(e); nroots];
        let (lib, func) = match &self.lib {
            Ok(l) => l.clone(),
            Err(e) => return points.iter().map(|_| fail(e.clone())).collect(),
        };
        let args: Vec<Result<Vec<Vec<u8>>, ExecError>> = points
            .iter()
            .map(|env| {
                self.kernel
                    .params
                    .iter()
                    .map(|p| kernel_io::arg_bytes(p, env))
                    .collect()
            })
            .collect();
        let ready: Vec<&[Vec<u8>]> = args
            .iter()
            .filter_map(|a| a.as_ref().ok().map(|a| a.as_slice()))
            .collect();
        let mut answers = call_many(&lib, &func, &ready).into_iter();
        args.into_iter()
            .zip(points)
            .map(|(a, env)| match a {
                Err(e) => fail(e),
                Ok(_) => match answers.next() {
                    Some(Ok(bufs)) => {
                        let after: Vec<Option<Vec<u8>>> = bufs.into_iter().map(Some).collect();
                        kernel_io::observe(&self.kernel.params, nroots, env, &after)
                    }
                    Some(Err(e)) => fail(e),
                    None => fail(ExecError::Crash {
                        what: "the worker answered fewer calls than it was sent".into(),
                    }),
                },
            })
            .collect()
    }
}

/// The worker: a small C program that `dlopen`s shared objects and calls their `void e_k(void**)`
/// entries, one request line at a time (`L id path`, `C id func hex…` → the args' hex back, each
/// argument a buffer of its own length, `z` for none: a scalar's bytes or a kernel buffer). A
/// SIGFPE in a kernel (`x/0`, `INT_MIN/-1`: a pure arithmetic trap, no state left behind) jumps
/// back to the loop and answers `F SIGFPE`, so the worker survives it; any other signal or a
/// hang ends the worker and the caller starts another.
const WORKER_C: &str = r#"
#include <dlfcn.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
typedef void (*entry_t)(void **);
static int hexv(char c) { return c <= '9' ? c - '0' : (c | 32) - 'a' + 10; }
static sigjmp_buf trap;
static void on_fpe(int sig) { siglongjmp(trap, sig); }
int main(void) {
  char *line = NULL; size_t cap = 0;
  void **libs = NULL; long nlibs = 0;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_fpe;
  sigaction(SIGFPE, &sa, NULL);
  while (getline(&line, &cap, stdin) > 0) {
    line[strcspn(line, "\n")] = 0;
    if (line[0] == 'L') {
      long id = strtol(line + 2, NULL, 10);
      char *path = strchr(line + 2, ' ');
      if (id >= nlibs) { libs = realloc(libs, sizeof(void*) * (id + 1)); for (long i = nlibs; i <= id; i++) libs[i] = NULL; nlibs = id + 1; }
      libs[id] = path ? dlopen(path + 1, RTLD_NOW | RTLD_LOCAL) : NULL;
      if (libs[id]) printf("ok\n"); else printf("E %s\n", dlerror());
    } else if (line[0] == 'C') {
      char *save = NULL;
      strtok_r(line, " ", &save);
      long id = strtol(strtok_r(NULL, " ", &save), NULL, 10);
      char *func = strtok_r(NULL, " ", &save);
      entry_t f = (id < nlibs && libs[id]) ? (entry_t)dlsym(libs[id], func) : NULL;
      if (!f) { printf("E no %s\n", func); fflush(stdout); continue; }
      unsigned char *bufs[64]; size_t lens[64]; void *args[64]; int n = 0; char *tok;
      while (n < 64 && (tok = strtok_r(NULL, " ", &save))) {
        size_t len = strlen(tok) / 2;
        /* at least 16 bytes: a scalar is read as its C type whatever the line held */
        bufs[n] = calloc(len < 16 ? 16 : len, 1);
        for (size_t i = 0; i < len; i++) bufs[n][i] = (unsigned char)(hexv(tok[2*i]) * 16 + hexv(tok[2*i+1]));
        lens[n] = len; args[n] = bufs[n]; n++;
      }
      if (sigsetjmp(trap, 1)) {
        for (int i = 0; i < n; i++) free(bufs[i]);
        printf("F SIGFPE (signal 8)\n"); fflush(stdout); continue;
      }
      f(args);
      for (int i = 0; i < n; i++) {
        if (lens[i] == 0) putchar('z');
        for (size_t j = 0; j < lens[i]; j++) printf("%02x", bufs[i][j]);
        putchar(i + 1 < n ? ' ' : '\n');
        free(bufs[i]);
      }
      if (n == 0) putchar('\n');
    }
    fflush(stdout);
  }
  return 0;
}
"#;

/// The worker executable, built once per process.
fn worker_exe() -> Result<PathBuf, ExecError> {
    static EXE: OnceLock<Result<PathBuf, CcError>> = OnceLock::new();
    EXE.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("uopfuzz-cworker-{}", std::process::id()));
        let io = |e: std::io::Error| CcError::Io(format!("{}: {e}", dir.display()));
        std::fs::create_dir_all(&dir).map_err(io)?;
        std::fs::write(dir.join("worker.c"), WORKER_C).map_err(io)?;
        run_cc(&["-O1", "worker.c", "-o", "worker", "-ldl"], None, &dir)?;
        Ok(dir.join("worker"))
    })
    .clone()
    .map_err(|what| ExecError::Compile {
        what: format!("building the C worker: {what}"),
    })
}

/// A running worker: its stdin, a channel of its stdout lines, and the libraries it loaded.
struct Worker {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    loaded: Vec<(PathBuf, usize)>,
}

impl Worker {
    fn spawn() -> Result<Worker, ExecError> {
        let exe = worker_exe()?;
        let mut child = Command::new(exe)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| ExecError::Crash {
                what: format!("cannot start the C worker: {e}"),
            })?;
        let stdin = child.stdin.take().ok_or_else(|| ExecError::Crash {
            what: "worker without stdin".into(),
        })?;
        let stdout = child.stdout.take().ok_or_else(|| ExecError::Crash {
            what: "worker without stdout".into(),
        })?;
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for l in BufReader::new(stdout).lines() {
                let Ok(l) = l else { break };
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        Ok(Worker {
            child,
            stdin,
            lines: rx,
            loaded: Vec::new(),
        })
    }
    /// One request line and its answer, or why none came (the worker is then dead).
    fn request(&mut self, line: &str) -> Result<String, ExecError> {
        self.send(&format!("{line}\n"))?;
        self.answer()
    }
    /// Writes request lines (each ending in a newline) without waiting for answers.
    fn send(&mut self, text: &str) -> Result<(), ExecError> {
        if self
            .stdin
            .write_all(text.as_bytes())
            .and_then(|_| self.stdin.flush())
            .is_err()
        {
            return Err(self.died());
        }
        Ok(())
    }
    /// The next answer line, or why none came within [`CALL_TIMEOUT`] (the worker is then
    /// dead).
    fn answer(&mut self) -> Result<String, ExecError> {
        match self.lines.recv_timeout(CALL_TIMEOUT) {
            Ok(l) => Ok(l),
            Err(RecvTimeoutError::Timeout) => {
                let _ = self.child.kill();
                let _ = self.child.wait();
                Err(ExecError::Timeout {
                    ms: CALL_TIMEOUT.as_millis() as u64,
                })
            }
            Err(RecvTimeoutError::Disconnected) => Err(self.died()),
        }
    }
    fn died(&mut self) -> ExecError {
        let status = self.child.wait();
        let what = match status {
            Ok(s) => {
                use std::os::unix::process::ExitStatusExt;
                match s.signal() {
                    Some(8) => "SIGFPE (signal 8)".to_string(),
                    Some(11) => "SIGSEGV (signal 11)".to_string(),
                    Some(n) => format!("signal {n}"),
                    None => format!("exit {s}"),
                }
            }
            Err(e) => e.to_string(),
        };
        ExecError::Crash { what }
    }
    fn lib_id(&mut self, lib: &Lib) -> Result<usize, ExecError> {
        if let Some((_, id)) = self.loaded.iter().find(|(p, _)| *p == lib.path) {
            return Ok(*id);
        }
        let id = self.loaded.len();
        let ans = self.request(&format!("L {id} {}", lib.path.display()))?;
        if ans != "ok" {
            return Err(ExecError::Compile { what: ans });
        }
        self.loaded.push((lib.path.clone(), id));
        Ok(id)
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Libraries a worker loads before it is replaced (it never unloads one; a fuzz run loads one
/// per batch).
const MAX_LOADED: usize = 64;

/// Idle workers, one taken per call (so fuzz threads run in parallel).
static POOL: Mutex<Vec<Worker>> = Mutex::new(Vec::new());

/// Calls `func` of `lib` once per argument list in `calls`, pipelined through one worker (every
/// request written before the answers are read: the round trip per call, not the kernel, is
/// what a scalar kernel costs); each call's args' bytes after it. A call that crashes or hangs
/// the worker is that call's `Crash`/`Timeout`, and the calls after it go to a fresh worker.
fn call_many(lib: &Lib, func: &str, calls: &[&[Vec<u8>]]) -> Vec<Result<Vec<Vec<u8>>, ExecError>> {
    let mut out = Vec::with_capacity(calls.len());
    while out.len() < calls.len() {
        let mut w = match POOL.lock().ok().and_then(|mut p| p.pop()) {
            Some(w) => w,
            None => match Worker::spawn() {
                Ok(w) => w,
                Err(e) => {
                    out.resize(calls.len(), Err(e));
                    break;
                }
            },
        };
        let id = match w.lib_id(lib) {
            Ok(id) => id,
            Err(e) => {
                out.resize(calls.len(), Err(e));
                break;
            }
        };
        // no more than a pipe buffer of requests in flight: a write never waits on a worker
        // that is stuck in a kernel, so the answer's timeout always gets to fire
        let mut text = String::new();
        let mut n = 0;
        for args in &calls[out.len()..] {
            let start = text.len();
            text.push_str(&format!("C {id} {func}"));
            for a in args.iter() {
                text.push(' ');
                if a.is_empty() {
                    text.push('z');
                } else {
                    text.push_str(&hex(a));
                }
            }
            text.push('\n');
            if n > 0 && text.len() > PIPE_BATCH {
                text.truncate(start);
                break;
            }
            n += 1;
        }
        let rest = &calls[out.len()..out.len() + n];
        // a worker that died while reading still has its answers so far in the channel
        let _ = w.send(&text);
        let mut healthy = true;
        for (k, args) in rest.iter().enumerate() {
            let ans = w.answer();
            let mut trapped = false;
            let res = ans.and_then(|ans| {
                if let Some(e) = ans.strip_prefix("F ") {
                    trapped = true;
                    return Err(ExecError::Crash {
                        what: e.to_string(),
                    });
                }
                if let Some(e) = ans.strip_prefix("E ") {
                    return Err(ExecError::Crash {
                        what: e.to_string(),
                    });
                }
                let bufs: Option<Vec<Vec<u8>>> = ans.split_whitespace().map(unhex).collect();
                bufs.filter(|o| o.len() == args.len())
                    .ok_or_else(|| ExecError::Crash {
                        what: format!("garbled worker answer {ans:?}"),
                    })
            });
            // a worker that crashed or hung is dropped (killed) after this call
            let dead = !trapped
                && matches!(
                    res,
                    Err(ExecError::Crash { .. } | ExecError::Timeout { .. })
                );
            out.push(res);
            if dead {
                healthy = false;
                // the rest of this batch was sent to a dead worker: resend it to a fresh one
                if k + 1 < rest.len() {
                    break;
                }
            }
        }
        // a worker keeps every library it loaded mapped: a fresh one after a few
        if healthy
            && w.loaded.len() < MAX_LOADED
            && let Ok(mut p) = POOL.lock()
        {
            p.push(w);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::alu::Val;

    /// Skips (with the reason) where clang is missing; CI has clang.
    fn have_clang() -> bool {
        match clang_available() {
            Ok(()) => true,
            Err(e) => {
                crate::ci::skip_or_fail("c backend test", &e.to_string(), true);
                false
            }
        }
    }

    #[test]
    fn smoke() {
        if !have_clang() {
            return;
        }
        for be in [C::ub_exploiting(), C::strict()] {
            crate::exec::smoke_test(&be);
        }
    }

    #[test]
    fn division_by_zero_is_a_crash_and_the_worker_goes_on() {
        if !have_clang() {
            return;
        }
        let mut g = Graph::new();
        let a = g.variable("a", -100, 100, DType::Int32);
        let b = g.variable("b", -100, 100, DType::Int32);
        let d = g.alu(Ops::CDIV, &[a, b]).unwrap();
        let mut p = C::ub_exploiting()
            .prepare(&g, &[d])
            .unwrap_or_else(|u| panic!("{u}"));
        let ok = Env::new().var("a", Val::Int(9)).var("b", Val::Int(2));
        let zero = Env::new().var("a", Val::Int(9)).var("b", Val::Int(0));
        let rows = p.run(&[&ok, &zero, &ok]);
        assert_eq!(rows[0][0].value, Some(Val::Int(4)));
        assert!(
            matches!(&rows[1][0].error, Some(ExecError::Crash { what }) if what.contains("SIGFPE")),
            "{:?}",
            rows[1][0]
        );
        assert_eq!(rows[2][0].value, Some(Val::Int(4)));
    }

    #[test]
    fn bfloat16_is_an_unsupported_value() {
        let mut g = Graph::new();
        let a = g.variable("a", -1, 1, DType::BFloat16);
        let n = g.alu(Ops::NEG, &[a]).unwrap();
        assert!(render_kernel(&g, &[n]).is_err());
    }

    /// `out[r] = k * (r < 2 ? inp[r] : <gated off>)` over `r < 4`: the kernel's SINK.
    pub(crate) fn gated_kernel(g: &mut Graph, k: i128) -> UOp {
        use crate::ir::{Arg, AxisType, ConstVal};
        let out = g.param(0, DType::Int32, 4);
        let inp = g.param(1, DType::Int32, 4);
        let four = g.cint(DType::WeakInt, 4);
        let r = g.mk(
            Ops::RANGE,
            DType::WeakInt,
            &[four],
            Arg::Range(0, AxisType::Loop),
        );
        let two = g.cint(DType::WeakInt, 2);
        let lt = g.alu(Ops::CMPLT, &[r, two]).unwrap();
        let inv = g.cnst(DType::WeakInt, ConstVal::Invalid);
        let gi = g.mk(Ops::WHERE, DType::WeakInt, &[lt, r, inv], Arg::None);
        let ii = g.mk(Ops::INDEX, DType::Int32, &[inp, gi], Arg::None);
        let ld = g.mk(Ops::LOAD, DType::Int32, &[ii], Arg::None);
        let kk = g.cint(DType::Int32, k);
        let m = g.alu(Ops::MUL, &[ld, kk]).unwrap();
        let io = g.mk(Ops::INDEX, DType::Int32, &[out, r], Arg::None);
        let st = g.mk(Ops::STORE, DType::Void, &[io, m], Arg::None);
        let e = g.mk(Ops::END, DType::Void, &[st, r], Arg::None);
        g.mk(Ops::SINK, DType::Void, &[e], Arg::None)
    }

    /// A kernel's buffers are bound and read back; a gated-off load is 0 (the gate survives
    /// lowering); two kernel roots run apart, each on its own copy of the buffers.
    #[test]
    fn kernel_buffers_are_bound_and_gates_kept() {
        use crate::exec::interp::Buffer;
        if !have_clang() {
            return;
        }
        let mut g = Graph::new();
        let k3 = gated_kernel(&mut g, 3);
        let k2 = gated_kernel(&mut g, 2);
        let x: Vec<Val> = [5, 6, 7, 8].into_iter().map(Val::Int).collect();
        let env = Env::new()
            .buffer(Buffer::zeros(DType::Int32, 4))
            .buffer(Buffer::from_vals(DType::Int32, &x).unwrap());
        let ints = |o: &Observed, slot: usize| -> Vec<i128> {
            o.buffers[slot]
                .data
                .iter()
                .map(|v| v.as_i128().unwrap_or(-1))
                .collect()
        };
        for be in [C::ub_exploiting(), C::strict()] {
            let mut p = be.prepare(&g, &[k3, k2]).unwrap_or_else(|u| panic!("{u}"));
            let rows = p.run(&[&env]);
            assert_eq!(rows[0].len(), 2, "{rows:?}");
            assert_eq!(ints(&rows[0][0], 0), vec![15, 18, 0, 0], "{:?}", rows[0][0]);
            assert_eq!(ints(&rows[0][1], 0), vec![10, 12, 0, 0], "{:?}", rows[0][1]);
            // the input buffer is the point's, unchanged
            assert_eq!(ints(&rows[0][0], 1), vec![5, 6, 7, 8]);
            let reference = crate::exec::interp_backend::observe(&g, k3, &env);
            assert_eq!(reference.buffers, rows[0][0].buffers);
        }
    }
}
