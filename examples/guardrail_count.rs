//! Runs one guardrail check N times, for instruction counting under
//! `valgrind --tool=callgrind` (deterministic, unlike wall-clock on a shared machine):
//! per-check cost = (Ir at 2N − Ir at N) / N.
//!
//! Usage: `guardrail_count <bash|edit|bash-lex|edit-lex> <N>`. Same requests and context as
//! `decision_bench`.

use std::hint::black_box;
use std::path::{Path, PathBuf};

use c2c_bridge::policy::guardrail::{self, FsProbe, Node, PathContext, PermissionRequest};

/// A probe that answers without system calls (every path is an existing directory, nothing
/// is a symlink): separates the guardrail's own work from its `lstat`/`readlink` calls.
struct LexicalFs;
impl FsProbe for LexicalFs {
    fn lstat(&self, _: &Path) -> Node {
        Node::Dir
    }
    fn read_link(&self, _: &Path) -> Option<PathBuf> {
        None
    }
    fn read_dir(&self, _: &Path) -> Option<Vec<(std::ffi::OsString, Node)>> {
        Some(Vec::new())
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
    let ctx = PathContext::new(here.clone(), here.clone(), home);
    let cmd = "cd src && grep -n fn lib.rs | head -5 > ../build.log 2>&1 && ls -la";
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
