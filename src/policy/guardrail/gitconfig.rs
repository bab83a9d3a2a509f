//! The git configuration git read commands obey: a value that names a program or directory by
//! a relative path (`core.hooksPath = .githooks`, `core.fsmonitor = scripts/fsmon`,
//! `diff.external = ./d.sh`) points into the project, where `allow` lets a peer write, so git
//! would run a file a peer planted. [`relative_program`] finds such a value.
//!
//! Read: `/etc/gitconfig`, `$XDG_CONFIG_HOME/git/config` (default `~/.config/git/config`),
//! `~/.gitconfig`, the repository's `config` (and `config.worktree`, and the common
//! directory's for a linked worktree), following `include.path` / `includeIf.*.path` up to
//! 16 files. A file that exists but cannot be read, or an include that cannot be followed,
//! counts as a finding (fail closed).

use std::path::{Path, PathBuf};

/// Keys (last dot-separated part, lower-case) whose value is a program or hook location.
const PROGRAM_KEYS: &[&str] = &[
    "hookspath",
    "fsmonitor",
    "pager",
    "editor",
    "external",
    "textconv",
    "command",
    "cmd",
    "program",
    "sshcommand",
    "helper",
    "clean",
    "smudge",
    "process",
    "askpass",
];

/// Largest config file read (bytes); a larger one counts as a finding.
const MAX_FILE: u64 = 256 * 1024;
const MAX_FILES: usize = 16;

/// The first setting that names a program or hooks directory by a relative path, as
/// "file: key = value", or `None`. `worktree` is the repository's working tree.
pub(super) fn relative_program(home: &Path, worktree: &Path) -> Option<String> {
    let mut queue: Vec<PathBuf> = vec![PathBuf::from("/etc/gitconfig")];
    let xdg = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| home.join(".config"));
    queue.push(xdg.join("git/config"));
    queue.push(home.join(".gitconfig"));
    let dot_git = worktree.join(".git");
    let gitdir = if dot_git.is_dir() {
        dot_git
    } else {
        let text = std::fs::read_to_string(&dot_git).ok()?;
        let Some(d) = text.trim().strip_prefix("gitdir:") else {
            return Some(format!("{}: not a gitdir file", dot_git.display()));
        };
        worktree.join(d.trim())
    };
    queue.push(gitdir.join("config"));
    queue.push(gitdir.join("config.worktree"));
    if let Ok(common) = std::fs::read_to_string(gitdir.join("commondir")) {
        queue.push(gitdir.join(common.trim()).join("config"));
    }
    let mut seen = 0;
    while let Some(file) = queue.pop() {
        seen += 1;
        if seen > MAX_FILES {
            return Some("too many git config files".into());
        }
        let text = match std::fs::metadata(&file) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(_) => return Some(format!("{}: cannot be read", file.display())),
            Ok(m) if m.len() > MAX_FILE => return Some(format!("{}: too large", file.display())),
            Ok(_) => match std::fs::read_to_string(&file) {
                Ok(t) => t,
                Err(_) => return Some(format!("{}: cannot be read", file.display())),
            },
        };
        let mut section = String::new();
        for line in text.lines() {
            let line = line.trim();
            if line.starts_with('[') {
                section = line.to_ascii_lowercase();
                continue;
            }
            if line.is_empty() || line.starts_with(['#', ';']) {
                continue;
            }
            let (key, value) = match line.split_once('=') {
                Some((k, v)) => (k.trim().to_ascii_lowercase(), v.trim().trim_matches('"')),
                None => (line.to_ascii_lowercase(), "true"),
            };
            if section.starts_with("[include") && key == "path" {
                let p = if let Some(rest) = value.strip_prefix("~/") {
                    home.join(rest)
                } else {
                    file.parent().unwrap_or(Path::new("/")).join(value)
                };
                queue.push(p);
                continue;
            }
            if !PROGRAM_KEYS.contains(&key.as_str()) {
                continue;
            }
            let v = value.to_ascii_lowercase();
            if v.is_empty() || v == "true" || v == "false" || value.starts_with(['/', '~']) {
                continue;
            }
            let first = value.split_whitespace().next().unwrap_or("");
            if key == "hookspath" || first.contains('/') || first.starts_with('.') {
                return Some(format!("{}: {key} = {value}", file.display()));
            }
        }
    }
    None
}
