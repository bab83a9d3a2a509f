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

/// What the configuration says: settings that name a program or hooks directory by a
/// relative path (as "file: key = value", and the path it names, taken from the worktree),
/// and why it could not be read completely, if so.
#[derive(Debug, Clone, Default)]
pub(super) struct Scan {
    pub(super) unreadable: Option<String>,
    pub(super) relative: Vec<(String, PathBuf)>,
    /// Settings that run a program on file contents git produces (`diff.*.textconv`,
    /// `diff.*.command`, `diff.external`, `filter.*.{clean,smudge,process}` other than
    /// git-lfs's own, `core.fsmonitor`), as "file: key = value" (red-team R4): with any of
    /// them, a peer who writes a tracked file chooses what that program is given, so git
    /// commands that produce contents are left.
    pub(super) drivers: Vec<String>,
}

impl Scan {
    /// Why git commands are not shown confined, if they are not.
    pub(super) fn objection(&self) -> Option<String> {
        self.unreadable
            .clone()
            .or_else(|| self.relative.first().map(|(r, _)| r.clone()))
    }
}

/// Scans git's configuration for `worktree` (the repository's working tree).
pub(super) fn scan(home: &Path, worktree: &Path) -> Scan {
    let mut out = Scan::default();
    if let Err(why) = scan_into(home, worktree, &mut out) {
        out.unreadable = Some(why);
    }
    out
}

fn scan_into(home: &Path, worktree: &Path, out: &mut Scan) -> Result<(), String> {
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
        let Ok(text) = std::fs::read_to_string(&dot_git) else {
            return Err(format!("{}: cannot be read", dot_git.display()));
        };
        let Some(d) = text.trim().strip_prefix("gitdir:") else {
            return Err(format!("{}: not a gitdir file", dot_git.display()));
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
            return Err("too many git config files".into());
        }
        let text = match std::fs::metadata(&file) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(_) => return Err(format!("{}: cannot be read", file.display())),
            Ok(m) if m.len() > MAX_FILE => return Err(format!("{}: too large", file.display())),
            Ok(_) => match std::fs::read_to_string(&file) {
                Ok(t) => t,
                Err(_) => return Err(format!("{}: cannot be read", file.display())),
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
            if is_driver(&section, &key, value) {
                out.drivers
                    .push(format!("{}: {section} {key} = {value}", file.display()));
            }
            let v = value.to_ascii_lowercase();
            if v.is_empty() || v == "true" || v == "false" || value.starts_with(['/', '~']) {
                continue;
            }
            let first = value.split_whitespace().next().unwrap_or("");
            if key == "hookspath" || first.contains('/') || first.starts_with('.') {
                let named = if key == "hookspath" { value } else { first };
                out.relative.push((
                    format!("{}: {key} = {value}", file.display()),
                    worktree.join(named),
                ));
            }
        }
    }
    Ok(())
}

/// Whether the text of a git configuration file may carry a credential (red-team R3): a URL
/// with a user part (`https://TOKEN@host/…`), an `http.*.extraheader`, a `[credential]`
/// section, an include (the included file is not read here), or a word like token, password
/// or secret anywhere. Fail closed: anything that looks like one counts.
pub(super) fn may_hold_credentials(text: &str) -> bool {
    let t = text.to_ascii_lowercase();
    if [
        "extraheader",
        "[credential",
        "[include",
        "token",
        "password",
        "passwd",
        "secret",
        "authorization",
        "bearer",
    ]
    .iter()
    .any(|w| t.contains(w))
    {
        return true;
    }
    // `scheme://user[:pass]@host`: an `@` before the first `/` after `://`.
    t.match_indices("://").any(|(i, _)| {
        let rest = &t[i + 3..];
        let host_end = rest.find(['/', ' ', '\t', '"', '\n']).unwrap_or(rest.len());
        rest[..host_end].contains('@')
    })
}

/// Whether `key = value` in `section` (lower-case, as written: `[diff "lockb"]`) runs a
/// program on contents git produces (see [`Scan::drivers`]). git-lfs's standard filter
/// (`git lfs install`) runs a fixed program and is not counted.
fn is_driver(section: &str, key: &str, value: &str) -> bool {
    let v = value.trim().to_ascii_lowercase();
    if v.is_empty() || v == "false" {
        return false;
    }
    let sec = section.trim_start_matches('[');
    if sec.starts_with("diff") {
        return matches!(key, "textconv" | "command" | "external");
    }
    if sec.starts_with("filter") {
        let lfs = matches!(
            v.as_str(),
            "git-lfs clean -- %f" | "git-lfs smudge -- %f" | "git-lfs filter-process"
        );
        return matches!(key, "clean" | "smudge" | "process") && !lfs;
    }
    if sec.starts_with("core") {
        return key == "fsmonitor" && v != "true";
    }
    false
}
