//! The places the user's git configuration names (G2 finding 8): `core.hooksPath` (hooks git
//! runs), `include.path` / `includeIf.*.path` (more configuration), `core.fsmonitor`, diff
//! textconv, filters, aliases, editors, ... (programs git runs). A file or directory named there
//! is git configuration: writing it is left, like `.git/config` itself.
//!
//! Read once per context by `check` (like `gitconfig.rs`: the files and the places they name are
//! protected, so no approved request changes them; a change the user makes shows in the next
//! context): the repository's
//! `config` (following a `.git` file and `commondir`) and `config.worktree`, the global
//! (`$GIT_CONFIG_GLOBAL`, or `~/.gitconfig` and `$XDG_CONFIG_HOME/git/config`) and the system
//! (`$GIT_CONFIG_SYSTEM`, or `/etc/gitconfig`) files, and every file they include (any
//! condition, at most 10 levels, like git). Fail closed: every word of a value that contains
//! `/`, and every word of a value of a key that names a path or a program, is taken as a
//! path, relative to the worktree and to the file's directory (`~/` is `$HOME`).

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
