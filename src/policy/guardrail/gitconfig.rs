//! The user's git configuration, read once per context for the guardrail (one parser,
//! [`parse`], as git reads a file: sections with subsections, quoting, escapes, comments,
//! continuation lines, includes):
//!
//! - [`scan`]: what git read commands obey. A value that names a program or directory by a
//!   relative path (`core.hooksPath = .githooks`, `core.fsmonitor = scripts/fsmon`,
//!   `diff.external = ./d.sh`) points into the project, where `allow` lets a peer write, so
//!   git would run a file a peer planted; [`scan`] finds such values, and the drivers that run
//!   a program on contents git produces. It reads `/etc/gitconfig`,
//!   `$XDG_CONFIG_HOME/git/config` (default `~/.config/git/config`), `~/.gitconfig`, the
//!   repository's `config` (and `config.worktree`, and the common directory's for a linked
//!   worktree), following `include.path` / `includeIf.*.path` up to 16 files. A file that
//!   exists but cannot be read, an include that cannot be followed, or a line git would not
//!   read counts as a finding (fail closed).
//! - [`named_words`]: the places the configuration names (red-team G2 finding 8):
//!   `core.hooksPath` (hooks git runs), `include.path` / `includeIf.*.path` (more
//!   configuration), `core.fsmonitor`, diff textconv, filters, aliases, editors, ... (programs
//!   git runs). A file or directory named there is git configuration: writing it is left, like
//!   `.git/config` itself. The checker (`protect.rs`) reads the repository's `config`
//!   (following a `.git` file and `commondir`) and `config.worktree`, the global
//!   (`$GIT_CONFIG_GLOBAL`, or `~/.gitconfig` and `$XDG_CONFIG_HOME/git/config`) and the
//!   system (`$GIT_CONFIG_SYSTEM`, or `/etc/gitconfig`) files, and every file they include
//!   (any condition, at most 10 levels, like git). Fail closed: every word of a value that
//!   contains `/`, and every word of a value of a key that names a path or a program, is
//!   taken as a path, relative to the worktree and to the file's directory (`~/` is `$HOME`).

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
        for e in parse(&text) {
            if e.section == "?" {
                return Err(format!("{}: a line git would not read", file.display()));
            }
            let section = e.section.as_str();
            let key = e.key.as_str();
            let value = e.value.as_deref().unwrap_or("true");
            if is_include(&e) {
                let p = if let Some(rest) = value.strip_prefix("~/") {
                    home.join(rest)
                } else {
                    file.parent().unwrap_or(Path::new("/")).join(value)
                };
                queue.push(p);
                continue;
            }
            if !PROGRAM_KEYS.contains(&key) {
                continue;
            }
            if is_driver(section, key, value) {
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

/// Whether `key = value` in `section` (as [`parse`] gives it: `diff.lockb`) runs a
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

/// Keys (last part, lower-case) whose value names a path or a program even without a `/`.
const PATH_KEYS: &[&str] = &[
    "hookspath",
    "fsmonitor",
    "path",
    "textconv",
    "command",
    "clean",
    "smudge",
    "process",
    "driver",
    "cmd",
    "program",
    "sshcommand",
    "editor",
    "pager",
    "askpass",
    "helper",
    "difffilter",
    "excludesfile",
    "attributesfile",
    "templatedir",
    "worktree",
];

/// Git's include depth limit.
pub(super) const MAX_INCLUDE_DEPTH: usize = 10;

/// One `key = value` of a configuration file: section (lower-case, with subsection), key
/// (lower-case), value (unquoted; `None` for a bare key).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Entry {
    pub(super) section: String,
    pub(super) key: String,
    pub(super) value: Option<String>,
}

/// Parses git configuration text, leniently: a line it cannot read is skipped (the words it
/// holds are still returned by [`named_words`] through [`Entry`]s of section `?`).
pub(super) fn parse(text: &str) -> Vec<Entry> {
    let mut out = Vec::new();
    let mut section = String::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let mut line = line.to_string();
        // Continuation: a value line ending with an unescaped backslash.
        while line.ends_with('\\') && !line.ends_with("\\\\") {
            line.pop();
            match lines.next() {
                Some(n) => line.push_str(n),
                None => break,
            }
        }
        let t = line.trim_start();
        if t.is_empty() || t.starts_with('#') || t.starts_with(';') {
            continue;
        }
        let mut rest = t;
        if let Some(h) = t.strip_prefix('[') {
            let Some(end) = h.find(']') else {
                out.push(unknown(t));
                continue;
            };
            let head = &h[..end];
            section = match head.find('"') {
                Some(q) => format!(
                    "{}.{}",
                    head[..q].trim().to_ascii_lowercase(),
                    head[q..].trim().trim_matches('"')
                ),
                None => head.trim().to_ascii_lowercase(),
            };
            rest = h[end + 1..].trim_start();
            if rest.is_empty() || rest.starts_with('#') || rest.starts_with(';') {
                continue;
            }
        }
        let (key, value) = match rest.find('=') {
            Some(eq) => (&rest[..eq], Some(unquote(&rest[eq + 1..]))),
            None => (rest, None),
        };
        out.push(Entry {
            section: section.clone(),
            key: key.trim().to_ascii_lowercase(),
            value,
        });
    }
    out
}

fn unknown(t: &str) -> Entry {
    Entry {
        section: "?".into(),
        key: "?".into(),
        value: Some(t.to_string()),
    }
}

/// A value as git reads it: quotes removed, `\"` `\\` `\n` `\t` `\b` escapes, a `#` or `;`
/// outside quotes ends it, surrounding blanks outside quotes dropped.
fn unquote(raw: &str) -> String {
    let mut out = String::new();
    let mut quoted = false;
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => quoted = !quoted,
            '\\' => match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some('b') => {
                    out.pop();
                }
                Some(c) => out.push(c),
                None => {}
            },
            '#' | ';' if !quoted => break,
            c => out.push(c),
        }
    }
    out.trim().to_string()
}

/// Whether `e` includes another file (its value is that file's path).
pub(super) fn is_include(e: &Entry) -> bool {
    e.key == "path" && (e.section == "include" || e.section.starts_with("includeif."))
}

/// The words of `e`'s value taken as paths (see the module doc).
pub(super) fn named_words(e: &Entry) -> Vec<String> {
    let Some(v) = &e.value else {
        return Vec::new();
    };
    if is_include(e) {
        return vec![v.clone()];
    }
    let by_key = PATH_KEYS.contains(&e.key.as_str())
        || e.section == "alias"
        || e.section.starts_with("alias.")
        || e.section == "?";
    if by_key
        && matches!(
            v.to_ascii_lowercase().as_str(),
            "true" | "false" | "yes" | "no"
        )
    {
        return Vec::new();
    }
    v.split(|c: char| c.is_whitespace() || matches!(c, '\'' | '"' | ';' | '&' | '|' | '=' | '!'))
        .filter(|w| !w.is_empty() && (by_key || w.contains('/')))
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sections_keys_and_values() {
        let es = parse(
            "[core]\n\thooksPath = .githooks ; c\n[include]\n  path = \"../shared cfg\"\n\
             [diff \"x\"]\n\ttextconv = sh tools/conv.sh\n[user]\n\tname = u\n[x] y = a/b\n",
        );
        let words: Vec<String> = es.iter().flat_map(named_words).collect();
        assert_eq!(
            words,
            [".githooks", "../shared cfg", "sh", "tools/conv.sh", "a/b"]
        );
        assert!(es.iter().any(is_include));
    }
}
