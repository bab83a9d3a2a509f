//! The guardrail decision (and through it the strict shell parser): never panics, and is
//! deterministic — the same request in the same file system gets the same answer, approval
//! included. The context is a throwaway project and home made once per fuzzing process.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use c2c_bridge::policy::guardrail::{check_with, PathContext, PermissionRequest, RealFs};
use libfuzzer_sys::fuzz_target;

fn sandbox() -> &'static (PathBuf, PathBuf) {
    static DIRS: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    DIRS.get_or_init(|| {
        let base = std::env::temp_dir().join(format!("c2c-guardrail-fuzz-{}", std::process::id()));
        let project = base.join("project");
        let home = base.join("home");
        for d in [
            project.join(".git/hooks"),
            project.join("src"),
            home.join(".ssh"),
            home.join(".config/opencode"),
        ] {
            std::fs::create_dir_all(&d).expect("sandbox");
        }
        let _ = std::fs::write(project.join("README.md"), "readme\n");
        let _ = std::fs::write(project.join(".git/config"), "[core]\n");
        let _ = std::fs::write(home.join(".bashrc"), "# rc\n");
        let _ = std::os::unix::fs::symlink(project.join(".git"), project.join("lnk"));
        (project, home)
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (project, home) = sandbox();
    let ctx = PathContext::new(project.clone(), project.clone(), home.clone());
    // The first byte picks the tool; the rest is its command or path.
    let (kind, rest) = match text.as_bytes().first() {
        Some(b'e') => ("edit", &text[1..]),
        Some(b'w') => ("write", &text[1..]),
        Some(b'r') => ("read", &text[1..]),
        _ => ("bash", text),
    };
    let req: PermissionRequest = if kind == "bash" {
        serde_json::from_value(serde_json::json!({
            "permission": "bash",
            "command": rest,
            "patterns": [rest],
            "args": {"command": rest},
        }))
    } else {
        serde_json::from_value(serde_json::json!({
            "permission": kind,
            "filepath": rest,
            "patterns": [rest],
            "args": {"filePath": rest},
        }))
    }
    .expect("request");
    let first = check_with(&req, &ctx, &RealFs);
    let second = check_with(&req, &ctx, &RealFs);
    assert_eq!(first, second, "not deterministic for {text:?}");
});
