//! Runs one guardrail check N times, for instruction counting under
//! `valgrind --tool=callgrind` (deterministic, unlike wall-clock on a shared machine):
//! per-check cost = (Ir at 2N − Ir at N) / N.
//!
//! Usage: `guardrail_count <bash|edit|bash-lex|edit-lex> <N>`. Same requests and context as
//! `decision_bench`.

use std::hint::black_box;
use std::path::{Path, PathBuf};

use c2c_bridge::policy::guardrail::{self, FsProbe, PathContext, PermissionRequest};

struct LexicalFs;
impl FsProbe for LexicalFs {
    fn canonicalize(&self, p: &Path) -> Option<PathBuf> {
        Some(p.to_path_buf())
    }
    fn read_link(&self, _: &Path) -> Option<PathBuf> {
        None
    }
    fn is_dir(&self, _: &Path) -> bool {
        false
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let which = args.next().unwrap_or_else(|| "edit".into());
    let n: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(1000);
    let here = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/root"));
    let ctx = PathContext {
        cwd: here.join("src"),
        worktree: here.clone(),
        home,
    };
    let cmd = "cd src && cargo build --release 2>&1 | tee ../build.log && ls -la";
    let bash: PermissionRequest = serde_json::from_value(serde_json::json!({
        "permission": "bash", "command": cmd, "patterns": [cmd], "args": {"command": cmd}
    }))
    .expect("request");
    let file = here.join("src/lib.rs").to_string_lossy().into_owned();
    let edit: PermissionRequest = serde_json::from_value(serde_json::json!({
        "permission": "edit", "filepath": file, "patterns": ["src/lib.rs"],
        "args": {"filePath": file}
    }))
    .expect("request");
    let (req, lexical) = match which.as_str() {
        "bash" => (&bash, false),
        "bash-lex" => (&bash, true),
        "edit-lex" => (&edit, true),
        _ => (&edit, false),
    };
    for _ in 0..n {
        if lexical {
            black_box(guardrail::check_with(req, &ctx, &LexicalFs));
        } else {
            black_box(guardrail::check(req, &ctx));
        }
    }
}
