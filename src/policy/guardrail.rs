//! The protected-path guardrail: the one check that can stop an auto-approval ("once") of a
//! tool call in a turn a peer message started (DESIGN.md, "Plugin side").
//!
//! Its input is **structured** ([`PermissionRequest`]: OpenCode's permission type, metadata,
//! patterns, the tool's raw arguments) plus local context ([`PathContext`]). Message text is
//! never an input. [`check`] returns a [`GuardrailHit`] when the call would write — or, for
//! secrets, read — a protected location; `None` means "no objection", never "safe".
//!
//! # What is protected ([`Category`])
//!
//! Names are compared per path component, case-insensitively, after NFKC normalisation with
//! invisible characters (zero-width, bidi, soft hyphen, controls) removed, so `agents.MD`,
//! fullwidth `．ｅｎｖ` and `.e\u{200d}nv` all count.
//!
//! - permission configuration: `opencode.json`, `opencode.jsonc`, any `.opencode/`,
//!   `.config/opencode/`, Claude Code's `.claude/` and `.claude.json`;
//! - agent instructions: `AGENTS.md`, `CLAUDE.md`, `CLAUDE.local.md`;
//! - credentials: `.env`, `.env.*`, `.npmrc`, `.netrc`, `.pypirc`, `.git-credentials`, `.pgpass`,
//!   `.my.cnf`, `.vault-token`, `id_rsa`/`id_ed25519`/`id_ecdsa`/`id_dsa`, any `.ssh/`, `.gnupg/`,
//!   `.aws/`, `.kube/`, `.docker/`, `.azure/`, `.password-store/`, `.config/gh/`,
//!   `.config/gcloud/`, `.cargo/credentials[.toml]`, `.gem/credentials`, `opencode/auth.json`;
//! - shell start-up: `.bashrc`, `.bash_profile`, `.bash_login`, `.bash_logout`, `.zshrc`,
//!   `.zprofile`, `.zshenv`, `.zlogin`, `.zlogout`, `.profile`, `.login`, `.cshrc`, `.tcshrc`,
//!   `.kshrc`, `.envrc` (direnv), `.config/fish/`, `/etc/profile[.d]`, `/etc/bash.bashrc`,
//!   `/etc/zsh*`, `/etc/environment`;
//! - git configuration: `.gitconfig`, `.git/config`, `.git/hooks/`, a `.git` directory itself,
//!   `.husky/`, `.config/git/`, `/etc/gitconfig`;
//! - scheduling and persistence: `LaunchAgents/`, `LaunchDaemons/`, `crontab`, `cron.d/` and
//!   `/var/spool/cron/`, `.config/systemd/`, `.config/autostart/`, `/etc/systemd/`,
//!   `/etc/init.d/`, `/etc/rc.local`;
//! - privilege: `sudoers`, `sudoers.d/`, `/etc/passwd`, `/etc/shadow`, `/etc/group`,
//!   `/etc/pam.d/`, `/etc/ssh/`, `/etc/security/`, `/etc/ld.so.preload`, `/etc/doas.conf`.
//!
//! Recursive operations (`rm -r`, `chmod -R`, `mv` of a directory, an `external_directory`
//! grant) also trip when their target *contains* protected places: `$HOME` or an ancestor, the
//! worktree or an ancestor, a `.config` directory, `/etc`.
//!
//! # Access kinds
//!
//! A **write** (edit/write/patch tools, redirections, writer commands, `ln` targets and
//! sources) trips on every category. A **read** (read/grep tools, `cat`, `grep`, `cp` sources,
//! `<` redirections) trips only on credentials: reading `~/.ssh/id_rsa` on a peer's behalf is
//! exfiltration, reading `AGENTS.md` is not. An argument of a command the guardrail does not
//! know is treated as a write ("names a protected path"). **Listing** does not count: `ls
//! ~/.ssh`, `find ~/.ssh -name '*.pub'` (without `-exec`/`-delete`), `stat`, `test -f`
//! reveal names, not contents, and `echo .env` writes nothing.
//!
//! # Path resolution
//!
//! Paths are resolved as the tool would: relative to the session directory, or the bash tool's
//! `workdir`, or a `cd`/`pushd`/`git -C`/`env -C` earlier in the same command; `~`, `~user`,
//! `$HOME`, `${HOME}`, `$PWD`, `$XDG_CONFIG_HOME` and variables assigned earlier in the command
//! (`F=~/.bashrc; echo x >> $F`) are expanded; `${X:-default}` uses the default; brace
//! expansion (`~/.{bashrc,zshrc}`) is applied; `..` is folded lexically; globs and unknown
//! values are matched against the protected names (`~/.ss?/id_*`, `.e$X`); existing symlinks are
//! followed with `canonicalize` of the longest existing prefix, plus one dangling link at the
//! boundary ([`FsProbe`], the only I/O here), and links created earlier in the same command by
//! `ln` are followed too. Edit/write `patterns` are worktree-relative.
//!
//! # Shell commands
//!
//! Commands are parsed by a small tolerant parser (see `shell.rs` for why not a crate): `;`,
//! `&&`, `||`, `|`, `&`, newlines, `( )` subshells, `{ }` groups, `$( )`, backticks, `<( )`,
//! `>( )`, here-documents and here-strings. Nested code is analysed recursively: `bash|sh|zsh
//! -c`, `eval`, a here-document or `echo ... |` piped into a shell, `env`, `sudo`/`doas`,
//! `nohup`, `nice`, `timeout`, `xargs` (fed by `echo`/`printf` when piped), `find -exec`, control
//! keywords (`if`, `then`, `do`, `!`, ...).
//!
//! Writes are found through redirections (`>`, `>>`, `>|`, `&>`, `&>>`, `N>`, `<>`, `>&file`),
//! `tee`, `cp`/`mv`/`install`/`ln`/`rsync`/`scp` destinations (incl. `-t DIR` and `DIR/` +
//! source name), `dd of=`, `sed -i`, `perl -i`/`ruby -i`, `truncate`, `touch`, `chmod`, `chown`,
//! `rm`, `mkdir`, `shred`, `sudo -e`, ... and through commands that write protected files
//! **without naming them**: `npm|pnpm|yarn|bun config set|delete|edit`, `npm set|login|adduser|
//! logout|token`, `git config` (any writing form; `--global`, `--system`, plain = `.git/config`),
//! `git remote add|set-url|...`, `git credential`, `git lfs install`, `crontab` (all but `-l`),
//! `at`, `ssh-keygen`, `ssh-copy-id`, `ssh-add`, `gpg --import|--gen-key|--export-secret-keys|...`,
//! `aws configure|sso login`, `docker|podman login|logout`, `kubectl config` (writing forms),
//! `gh auth` (all but `status`), `gcloud auth`, `az login`, `cargo login`, `pip config set`,
//! `poetry config`, `opencode auth`, `claude config|mcp`, `visudo`, `useradd`/`usermod`/`passwd`
//! and friends, `launchctl load|bootstrap|enable|submit`, `systemctl [--user] enable|link|edit|
//! ...`, `systemd-run --on-*`, `loginctl enable-linger`, `chsh`, `direnv allow`.
//!
//! # What the guardrail cannot see (it is best-effort, not a sandbox)
//!
//! - **Interpreter code** (`python -c`, `node -e`, `perl -e`, `awk` programs, `sed` scripts, a
//!   here-document into `python`, a script file run by any interpreter) is not analysed. It
//!   trips only if its text *names* a protected path (`open("/home/u/.bashrc", "a")`); code that
//!   builds the path (`"~/.ba" + "shrc"`, base64) passes.
//! - **Programs' own behaviour**: `make`, `npm run x`, `cargo build` (build scripts), test
//!   runners, `git submodule update` or `git push -u` writing `.git/config`, archive extraction
//!   (`tar x`, `unzip`) whose member names are unknown, installers.
//! - **Values known only at run time**: `$(...)` other than `echo`/`printf`/`pwd`, `read`,
//!   loop variables, positional parameters, `cd -`, files listed by `xargs` from a non-`echo`
//!   producer. Such a value never matches a name by itself (`rm "$f"` passes); it matches only
//!   combined with literal text (`.e$X`).
//! - **Syntax it does not model**: aliases and functions defined elsewhere, `case`/`for` bodies
//!   beyond their commands, `set -o` options, globs that depend on `dotglob`. A command the
//!   parser rejects (unterminated quote or substitution — bash would reject it too) is scanned
//!   as text for protected paths, and the reason says it could not be parsed.
//! - **Remote targets**: `ssh host cmd`, `scp x host:~/.bashrc`, `docker exec`, `kubectl exec`.
//! - **Time of check vs time of use**: symlinks are resolved when [`check`] runs; a link
//!   created later by another process is not seen.

mod shell;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use unicode_normalization::UnicodeNormalization;

use self::shell::{
    Node, Part, RedirKind, Script, Simple, Word, BRACE_CLOSE, BRACE_OPEN, BRACE_SEP, MAX_DEPTH,
    ONE, STAR, UNK,
};

/// The kind of protected location a tool call would touch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Category {
    /// Permission configuration: `opencode.json[c]`, `.opencode/`, `~/.config/opencode/`.
    PermissionConfig,
    /// Agent instructions: `AGENTS.md`, `CLAUDE.md`.
    AgentInstructions,
    /// Credentials and secrets: `.env`, `.ssh/`, `.aws/`, `.npmrc`, ...
    Credentials,
    /// Shell start-up files: `.bashrc`, `.zshrc`, `.profile`, `~/.config/fish/`, ...
    ShellStartup,
    /// Git configuration and hooks: `.gitconfig`, `.git/config`, `.git/hooks/`.
    GitConfig,
    /// Scheduling and persistence: crontab, LaunchAgents, systemd user units.
    Scheduling,
    /// Privilege: sudoers, `/etc/sudoers.d/`, accounts.
    Privilege,
}

impl Category {
    /// A short human name, used in reasons.
    pub fn as_str(self) -> &'static str {
        match self {
            Category::PermissionConfig => "permission configuration",
            Category::AgentInstructions => "agent instructions",
            Category::Credentials => "credentials",
            Category::ShellStartup => "shell start-up",
            Category::GitConfig => "git configuration",
            Category::Scheduling => "scheduling/persistence",
            Category::Privilege => "privilege",
        }
    }
}

/// Why the guardrail objects to a tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuardrailHit {
    /// The protected category.
    pub category: Category,
    /// The protected path as resolved (with `~` for `$HOME`), when one is known; `None` for
    /// commands that write protected files without naming them (e.g. `npm login`) may still
    /// carry the implied path.
    pub path: Option<String>,
    /// One sentence for the log and the user, e.g. "bash: redirection `>>` writes ~/.bashrc
    /// (shell start-up)".
    pub reason: String,
}

/// One permission question, as OpenCode raised it (`permission.asked` / `permission.v2.asked`).
/// Deserialisable from the plugin's camelCase object.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PermissionRequest {
    /// OpenCode's `permission` string (`bash`, `edit`, `write`, `read`, `external_directory`,
    /// `patch`, `grep`, an MCP tool name, ...) or the v2 `action`.
    pub permission: String,
    /// `metadata.command` (bash).
    pub command: Option<String>,
    /// `metadata.filepath` (edit, write, external_directory).
    pub filepath: Option<String>,
    /// `patterns`: worktree-relative paths for edit/write, command patterns for bash,
    /// `dir/*` globs for external_directory.
    pub patterns: Vec<String>,
    /// v2 `resources`, read like `patterns`.
    pub resources: Vec<String>,
    /// The tool call's raw arguments, e.g. `{"command": "...", "workdir": "..."}` or
    /// `{"filePath": "..."}`. `Null` when unknown.
    pub args: serde_json::Value,
}

/// Where paths are resolved from. All three should be absolute.
#[derive(Debug, Clone)]
pub struct PathContext {
    /// The session's directory (OpenCode `Instance.directory`): the cwd of tools.
    pub cwd: PathBuf,
    /// The worktree root (OpenCode `Instance.worktree`): base of edit/write `patterns`.
    pub worktree: PathBuf,
    /// The user's home directory (`$HOME`).
    pub home: PathBuf,
}

/// The file-system access the guardrail needs, injectable for tests.
pub trait FsProbe {
    /// `std::fs::canonicalize`: the path with every symlink resolved, if it exists.
    fn canonicalize(&self, p: &Path) -> Option<PathBuf>;
    /// `std::fs::read_link`: the target of a symlink (dangling or not).
    fn read_link(&self, p: &Path) -> Option<PathBuf>;
    /// Whether `p` is an existing directory (following symlinks).
    fn is_dir(&self, p: &Path) -> bool;
}

/// The real file system.
#[derive(Debug, Clone, Copy, Default)]
pub struct RealFs;

impl FsProbe for RealFs {
    fn canonicalize(&self, p: &Path) -> Option<PathBuf> {
        std::fs::canonicalize(p).ok()
    }
    fn read_link(&self, p: &Path) -> Option<PathBuf> {
        std::fs::read_link(p).ok()
    }
    fn is_dir(&self, p: &Path) -> bool {
        p.is_dir()
    }
}

/// Checks one permission request against the real file system. See the module doc.
pub fn check(req: &PermissionRequest, ctx: &PathContext) -> Option<GuardrailHit> {
    check_with(req, ctx, &RealFs)
}

/// [`check`] with an explicit file-system probe.
pub fn check_with(
    req: &PermissionRequest,
    ctx: &PathContext,
    fs: &dyn FsProbe,
) -> Option<GuardrailHit> {
    let mut c = Checker::new(ctx, fs);
    c.request(req);
    c.hit
}

// ---------------------------------------------------------------------------------------------
// Protected names

type Rule = (&'static str, Category);
use Category::*;

/// A component with one of these names protects everything under it, wherever it is.
const ANY_COMPONENT: &[Rule] = &[
    (".opencode", PermissionConfig),
    (".claude", PermissionConfig),
    (".ssh", Credentials),
    (".gnupg", Credentials),
    (".aws", Credentials),
    (".kube", Credentials),
    (".docker", Credentials),
    (".azure", Credentials),
    (".password-store", Credentials),
    (".husky", GitConfig),
    ("launchagents", Scheduling),
    ("launchdaemons", Scheduling),
    ("cron.d", Scheduling),
    ("cron.daily", Scheduling),
    ("cron.hourly", Scheduling),
    ("cron.weekly", Scheduling),
    ("cron.monthly", Scheduling),
    ("sudoers.d", Privilege),
];

/// Directories under a `.config` component.
const CONFIG_SUB: &[Rule] = &[
    ("opencode", PermissionConfig),
    ("fish", ShellStartup),
    ("systemd", Scheduling),
    ("autostart", Scheduling),
    ("git", GitConfig),
    ("gh", Credentials),
    ("gcloud", Credentials),
];

/// File names protected wherever they are (last component).
const LAST_NAME: &[Rule] = &[
    ("opencode.json", PermissionConfig),
    ("opencode.jsonc", PermissionConfig),
    (".claude.json", PermissionConfig),
    ("agents.md", AgentInstructions),
    ("claude.md", AgentInstructions),
    ("claude.local.md", AgentInstructions),
    (".env", Credentials),
    (".npmrc", Credentials),
    (".netrc", Credentials),
    (".pypirc", Credentials),
    (".git-credentials", Credentials),
    (".pgpass", Credentials),
    (".my.cnf", Credentials),
    (".vault-token", Credentials),
    ("id_rsa", Credentials),
    ("id_ed25519", Credentials),
    ("id_ecdsa", Credentials),
    ("id_dsa", Credentials),
    (".bashrc", ShellStartup),
    (".bash_profile", ShellStartup),
    (".bash_login", ShellStartup),
    (".bash_logout", ShellStartup),
    (".zshrc", ShellStartup),
    (".zprofile", ShellStartup),
    (".zshenv", ShellStartup),
    (".zlogin", ShellStartup),
    (".zlogout", ShellStartup),
    (".profile", ShellStartup),
    (".login", ShellStartup),
    (".cshrc", ShellStartup),
    (".tcshrc", ShellStartup),
    (".kshrc", ShellStartup),
    (".envrc", ShellStartup),
    (".gitconfig", GitConfig),
    ("crontab", Scheduling),
    ("sudoers", Privilege),
];

/// `(parent, child)` pairs protected wherever they are.
const PAIRS: &[(&str, &str, Category)] = &[
    (".git", "config", GitConfig),
    (".git", "hooks", GitConfig),
    (".cargo", "credentials", Credentials),
    (".cargo", "credentials.toml", Credentials),
    (".gem", "credentials", Credentials),
    ("opencode", "auth.json", Credentials),
    ("spool", "cron", Scheduling),
];

/// Entries directly under `/etc`.
const ETC: &[Rule] = &[
    ("passwd", Privilege),
    ("shadow", Privilege),
    ("group", Privilege),
    ("gshadow", Privilege),
    ("pam.d", Privilege),
    ("security", Privilege),
    ("ssh", Privilege),
    ("ld.so.preload", Privilege),
    ("doas.conf", Privilege),
    ("profile", ShellStartup),
    ("profile.d", ShellStartup),
    ("bash.bashrc", ShellStartup),
    ("bashrc", ShellStartup),
    ("zshrc", ShellStartup),
    ("zsh", ShellStartup),
    ("zprofile", ShellStartup),
    ("zshenv", ShellStartup),
    ("environment", ShellStartup),
    ("gitconfig", GitConfig),
    ("systemd", Scheduling),
    ("init.d", Scheduling),
    ("rc.local", Scheduling),
    ("anacrontab", Scheduling),
];

/// One normalised path component. `s` may hold glob/unknown sentinels.
struct Comp {
    s: String,
    pattern: bool,
    opaque: bool,
}

fn norm_comp(raw: &str) -> Comp {
    let s: String = raw
        .nfkc()
        .filter(|&c| !crate::envelope::needs_escape(c))
        .flat_map(char::to_lowercase)
        .collect();
    let pattern = s.chars().any(|c| matches!(c, STAR | ONE | UNK));
    let opaque = !s.is_empty() && s.chars().all(|c| c == UNK);
    Comp { s, pattern, opaque }
}

impl Comp {
    fn is(&self, name: &str) -> bool {
        if self.opaque {
            false
        } else if self.pattern {
            glob(&self.s, name)
        } else {
            self.s == name
        }
    }
    fn is_env_file(&self) -> bool {
        if self.pattern {
            !self.opaque && (glob(&self.s, ".env") || glob(&self.s, ".env.local"))
        } else {
            self.s == ".env" || self.s.starts_with(".env.")
        }
    }
}

/// Glob match of a sentinel pattern against a literal name. `*`/`?` at the start do not match
/// a leading dot (bash without `dotglob`); an unknown value does.
fn glob(pat: &str, name: &str) -> bool {
    let p: Vec<char> = pat.chars().collect();
    let n: Vec<char> = name.chars().collect();
    if n.first() == Some(&'.') && matches!(p.first(), Some(&STAR) | Some(&ONE)) {
        return false;
    }
    let (mut pi, mut ni) = (0usize, 0usize);
    let mut back: Option<(usize, usize)> = None;
    while ni < n.len() {
        if pi < p.len() && (p[pi] == ONE || p[pi] == n[ni]) {
            pi += 1;
            ni += 1;
        } else if pi < p.len() && (p[pi] == STAR || p[pi] == UNK) {
            back = Some((pi, ni));
            pi += 1;
        } else if let Some((bp, bn)) = back {
            pi = bp + 1;
            ni = bn + 1;
            back = Some((bp, bn + 1));
        } else {
            return false;
        }
    }
    while pi < p.len() && (p[pi] == STAR || p[pi] == UNK) {
        pi += 1;
    }
    pi == p.len()
}

/// The category of a normalised absolute path, if protected.
fn categorize(comps: &[Comp]) -> Option<Category> {
    let n = comps.len();
    for (i, c) in comps.iter().enumerate() {
        if let Some((_, cat)) = ANY_COMPONENT.iter().find(|(name, _)| c.is(name)) {
            return Some(*cat);
        }
        let next = comps.get(i + 1);
        if let Some(next) = next {
            if c.is(".config") {
                if let Some((_, cat)) = CONFIG_SUB.iter().find(|(name, _)| next.is(name)) {
                    return Some(*cat);
                }
            }
            if let Some((_, _, cat)) = PAIRS.iter().find(|(a, b, _)| c.is(a) && next.is(b)) {
                return Some(*cat);
            }
        }
        if i + 1 == n {
            if c.is(".git") {
                return Some(GitConfig);
            }
            if c.is_env_file() {
                return Some(Credentials);
            }
            if let Some((_, cat)) = LAST_NAME.iter().find(|(name, _)| c.is(name)) {
                return Some(*cat);
            }
        }
    }
    if n >= 2 && comps[0].is("etc") {
        if let Some((_, cat)) = ETC.iter().find(|(name, _)| comps[1].is(name)) {
            return Some(*cat);
        }
    }
    None
}

// ---------------------------------------------------------------------------------------------
// Paths

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    /// Contents read: trips on credentials only.
    Read,
    /// Written, created, deleted, linked, or named by a command we cannot analyse.
    Write,
    /// A write that covers everything below the path (`rm -r`, `mv dir`, a directory grant).
    Subtree,
}

fn split_abs(raw: &str, base: &str) -> Vec<String> {
    let mut comps: Vec<String> = Vec::new();
    let joined;
    let full = if raw.starts_with('/') {
        raw
    } else {
        joined = format!("{base}/{raw}");
        &joined
    };
    for c in full.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                comps.pop();
            }
            c => comps.push(c.to_owned()),
        }
    }
    comps
}

fn join(comps: &[String]) -> String {
    if comps.is_empty() {
        return "/".into();
    }
    let mut s = String::new();
    for c in comps {
        s.push('/');
        s.push_str(c);
    }
    s
}

fn path_comps(p: &Path) -> Vec<String> {
    split_abs(&p.to_string_lossy(), "/")
}

fn has_sentinel(s: &str) -> bool {
    s.chars().any(|c| ('\u{E000}'..='\u{E005}').contains(&c))
}

/// The directory used for relative paths after an unknowable `cd`: a single opaque component.
const UNKNOWN_DIR: &str = "/\u{E002}";

struct Checker<'a> {
    ctx: &'a PathContext,
    fs: &'a dyn FsProbe,
    home: Vec<String>,
    home_str: String,
    worktree: Vec<String>,
    /// Symlinks created earlier in the same command: (link, target), both lexical.
    links: Vec<(Vec<String>, Vec<String>)>,
    hit: Option<GuardrailHit>,
    /// Prefix for reasons, e.g. "bash" or "bash (could not be parsed: ...)".
    origin: String,
}

impl<'a> Checker<'a> {
    fn new(ctx: &'a PathContext, fs: &'a dyn FsProbe) -> Self {
        let home = path_comps(&ctx.home);
        Checker {
            ctx,
            fs,
            home_str: join(&home),
            home,
            worktree: path_comps(&ctx.worktree),
            links: Vec::new(),
            hit: None,
            origin: String::new(),
        }
    }

    fn display(&self, comps: &[String]) -> String {
        let s: String = join(comps).chars().map(shell::unsentinel).collect();
        match s.strip_prefix(&self.home_str) {
            Some(rest) if rest.is_empty() || rest.starts_with('/') => format!("~{rest}"),
            _ => s,
        }
    }

    fn report(&mut self, category: Category, path: Option<String>, reason: String) {
        if self.hit.is_none() {
            let reason = if self.origin.is_empty() {
                reason
            } else {
                format!("{}: {reason}", self.origin)
            };
            self.hit = Some(GuardrailHit {
                category,
                path,
                reason,
            });
        }
    }

    /// Checks a path. `raw` may hold sentinels; `base` is the absolute directory for relative
    /// paths. Returns whether it tripped.
    fn path(&mut self, raw: &str, base: &str, access: Access, what: &str) -> bool {
        if self.hit.is_some() {
            return true;
        }
        if raw.is_empty() {
            return false;
        }
        let lexical = split_abs(raw, base);
        let mut candidates = vec![lexical.clone()];
        for (link, target) in &self.links {
            if lexical.len() >= link.len() && lexical[..link.len()] == link[..] {
                let mut c = target.clone();
                c.extend_from_slice(&lexical[link.len()..]);
                candidates.push(c);
            }
        }
        if !has_sentinel(raw) && !has_sentinel(base) {
            if let Some(real) = self.resolve_fs(&lexical) {
                if real != lexical {
                    candidates.push(real);
                }
            }
        }
        for comps in &candidates {
            let norm: Vec<Comp> = comps.iter().map(|c| norm_comp(c)).collect();
            let cat = categorize(&norm).or_else(|| {
                if access == Access::Subtree {
                    self.covers(&norm)
                } else {
                    None
                }
            });
            if let Some(cat) = cat {
                if access != Access::Read || cat == Credentials {
                    let shown = self.display(comps);
                    let via = if comps != &lexical {
                        format!(" (via {})", self.display(&lexical))
                    } else {
                        String::new()
                    };
                    let verb = match access {
                        Access::Read => "reads",
                        Access::Write => "writes",
                        Access::Subtree => "recursively changes",
                    };
                    self.report(
                        cat,
                        Some(shown.clone()),
                        format!("{what} {verb} {shown}{via} ({})", cat.as_str()),
                    );
                    return true;
                }
            }
        }
        false
    }

    /// For recursive operations: does the path contain protected places?
    fn covers(&self, norm: &[Comp]) -> Option<Category> {
        let is_prefix_of = |whole: &[String]| {
            norm.len() <= whole.len()
                && norm
                    .iter()
                    .zip(whole)
                    .all(|(c, w)| !c.opaque && c.is(&norm_comp(w).s))
        };
        if is_prefix_of(&self.home) {
            return Some(Credentials);
        }
        if is_prefix_of(&self.worktree) {
            return Some(AgentInstructions);
        }
        match norm.last() {
            Some(c) if c.is(".config") => Some(PermissionConfig),
            Some(c) if norm.len() == 1 && c.is("etc") => Some(Privilege),
            _ => None,
        }
    }

    /// Follows symlinks: canonicalize the longest existing prefix, then one dangling link at
    /// the boundary. `None` when nothing exists (not even `/`).
    fn resolve_fs(&self, comps: &[String]) -> Option<Vec<String>> {
        for k in (0..=comps.len()).rev() {
            let prefix = join(&comps[..k]);
            if let Some(real) = self.fs.canonicalize(Path::new(&prefix)) {
                let mut out = path_comps(&real);
                let mut rest = &comps[k..];
                if let Some(first) = rest.first() {
                    let cand = Path::new(&join(&out)).join(first);
                    if let Some(t) = self.fs.read_link(&cand) {
                        out = split_abs(&t.to_string_lossy(), &join(&out));
                        rest = &rest[1..];
                    }
                }
                out.extend_from_slice(rest);
                return Some(out);
            }
        }
        None
    }

    fn base_of(&self, dir: Option<&str>) -> String {
        let cwd = self.ctx.cwd.to_string_lossy();
        match dir {
            Some(d) if !d.is_empty() => join(&split_abs(&self.expand_plain(d), &cwd)),
            _ => join(&split_abs(&cwd, "/")),
        }
    }

    /// `~`, `$HOME` and `${HOME}` in a path that did not come through the shell parser.
    fn expand_plain(&self, p: &str) -> String {
        let home = &self.home_str;
        let p = p.replace("${HOME}", home).replace("$HOME", home);
        if p == "~" {
            home.clone()
        } else if let Some(rest) = p.strip_prefix("~/") {
            format!("{home}/{rest}")
        } else {
            p
        }
    }

    // -----------------------------------------------------------------------------------------
    // Requests

    fn request(&mut self, req: &PermissionRequest) {
        let kind = req.permission.to_ascii_lowercase();
        let args = &req.args;
        let arg_str = |k: &str| args.get(k).and_then(|v| v.as_str());
        let cwd = self.base_of(None);
        let worktree = join(&self.worktree);
        match kind.as_str() {
            "bash" | "shell" => {
                let base = self.base_of(arg_str("workdir"));
                let mut cmds: Vec<&str> = Vec::new();
                cmds.extend(req.command.as_deref());
                cmds.extend(arg_str("command"));
                if cmds.is_empty() {
                    cmds.extend(
                        req.patterns
                            .iter()
                            .chain(&req.resources)
                            .map(|s| s.trim_end_matches(['*', ' '])),
                    );
                }
                cmds.dedup();
                for cmd in cmds {
                    self.command(cmd, &base);
                }
            }
            "edit" | "write" | "multiedit" | "patch" | "apply_patch" => {
                let what = format!("{kind} tool");
                for p in req
                    .filepath
                    .iter()
                    .map(String::as_str)
                    .chain(arg_str("filePath"))
                    .chain(arg_str("filepath"))
                {
                    let p = self.expand_plain(p);
                    self.path(&p, &cwd, Access::Write, &what);
                }
                for p in req.patterns.iter().chain(&req.resources) {
                    let p = self.expand_plain(p);
                    self.path(&p, &worktree, Access::Write, &what);
                }
                for key in ["patchText", "patch_text", "patch", "input"] {
                    if let Some(text) = arg_str(key) {
                        for p in patch_paths(text) {
                            let p = self.expand_plain(p);
                            self.path(&p, &cwd, Access::Write, &what);
                        }
                    }
                }
            }
            "read" | "grep" => {
                let what = format!("{kind} tool");
                let paths = req
                    .filepath
                    .iter()
                    .map(String::as_str)
                    .chain(arg_str("filePath"))
                    .chain(arg_str("path"));
                for p in paths.chain(
                    req.patterns
                        .iter()
                        .chain(&req.resources)
                        .map(String::as_str),
                ) {
                    if kind == "grep" && !looks_like_path(p) {
                        continue;
                    }
                    let p = self.expand_plain(p);
                    self.path(&p, &cwd, Access::Read, &what);
                }
            }
            "external_directory" => {
                for p in req
                    .filepath
                    .iter()
                    .map(String::as_str)
                    .chain(arg_str("filePath"))
                {
                    let p = self.expand_plain(p);
                    self.path(&p, &cwd, Access::Write, "external_directory grant for");
                }
                for p in req.patterns.iter().chain(&req.resources) {
                    let dir = p.trim_end_matches('*').trim_end_matches('/');
                    let dir = if dir.is_empty() { "/" } else { dir };
                    let dir = self.expand_plain(dir);
                    self.path(&dir, &cwd, Access::Subtree, "external_directory grant");
                }
            }
            // Tools whose patterns are URLs, agent names or queries, not paths.
            "webfetch" | "websearch" | "codesearch" | "task" | "todowrite" | "todoread"
            | "question" | "skill" | "doom_loop" | "list" | "glob" | "lsp" => {
                if let Some(p) = &req.filepath {
                    let p = self.expand_plain(p);
                    self.path(&p, &cwd, Access::Write, &format!("{kind} tool"));
                }
            }
            _ => {
                // Unknown (MCP or custom) tools: anything path-like is treated as written.
                let what = format!("tool `{}`", kind);
                let mut paths: Vec<String> = req.filepath.iter().cloned().collect();
                paths.extend(
                    req.patterns
                        .iter()
                        .chain(&req.resources)
                        .filter(|p| looks_like_path(p))
                        .cloned(),
                );
                collect_path_args(args, false, &mut paths);
                for p in paths {
                    let p = self.expand_plain(&p);
                    self.path(&p, &cwd, Access::Write, &what);
                }
            }
        }
    }

    fn command(&mut self, cmd: &str, base: &str) {
        let mut st = ShState {
            cwd: Some(base.to_owned()),
            vars: HashMap::new(),
        };
        self.origin = "bash".into();
        match shell::parse(cmd) {
            Ok(script) => self.script(&script, &mut st, 0),
            Err(e) => {
                self.origin = format!(
                    "bash (command could not be parsed: {}; scanned as text)",
                    e.0
                );
                self.scan_text(cmd, &st, "the command text names");
            }
        }
    }

    // -----------------------------------------------------------------------------------------
    // Shell analysis

    fn script(&mut self, script: &Script, st: &mut ShState, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        let mut prev_out: Option<Vec<String>> = None;
        for node in script {
            if self.hit.is_some() {
                return;
            }
            match node {
                Node::Subshell(inner) => {
                    let mut sub = st.clone();
                    self.script(inner, &mut sub, depth + 1);
                    prev_out = None;
                }
                Node::Simple(s) => {
                    let input = if s.piped { prev_out.take() } else { None };
                    prev_out = self.simple(s, st, depth, input);
                }
            }
        }
    }

    /// Analyses one simple command. Returns its output when it is `echo`/`printf` (for a
    /// following `| xargs` or `| sh`).
    fn simple(
        &mut self,
        s: &Simple,
        st: &mut ShState,
        depth: usize,
        input: Option<Vec<String>>,
    ) -> Option<Vec<String>> {
        let base = st.base();
        for r in &s.redirs {
            let targets = self.expand(&r.target, st, depth);
            let access = match r.kind {
                RedirKind::Out => Access::Write,
                RedirKind::In => Access::Read,
                RedirKind::NoFile => continue,
            };
            for t in targets {
                self.path(&t, &base, access, &format!("redirection `{}`", r.op));
            }
        }
        let mut argv: Vec<String> = Vec::new();
        let mut assigns: Vec<(String, String)> = Vec::new();
        for w in &s.words {
            if argv.is_empty() {
                if let Some((name, value)) = self.assignment(w, st, depth) {
                    assigns.push((name, value));
                    continue;
                }
            }
            argv.extend(self.expand(w, st, depth));
        }
        if argv.is_empty() {
            for (k, v) in assigns {
                st.vars.insert(k, v);
            }
            return None;
        }
        if self.hit.is_some() {
            return None;
        }
        let ctx = CmdCtx {
            heredocs: &s.heredocs,
            input: input.as_deref(),
            depth,
        };
        self.dispatch(&argv, st, &ctx)
    }

    /// `NAME=value` as the leading word of a command.
    fn assignment(&mut self, w: &Word, st: &ShState, depth: usize) -> Option<(String, String)> {
        let Some(Part::Lit(first)) = w.parts.first() else {
            return None;
        };
        let eq = first.find('=')?;
        let name = &first[..eq];
        if name.is_empty()
            || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            || name.as_bytes()[0].is_ascii_digit()
        {
            return None;
        }
        let mut rest = w.clone();
        let after = first[eq + 1..].to_owned();
        rest.parts[0] = Part::Lit(after);
        let value = self
            .expand(&rest, st, depth)
            .into_iter()
            .next()
            .unwrap_or_default();
        Some((name.to_owned(), value))
    }

    /// Expands a word to zero or more strings with sentinels (brace expansion applied).
    fn expand(&mut self, w: &Word, st: &ShState, depth: usize) -> Vec<String> {
        let mut s = String::new();
        for (i, p) in w.parts.iter().enumerate() {
            match p {
                Part::Lit(t) => {
                    if i == 0 && t.starts_with('~') {
                        let end = t.find('/').unwrap_or(t.len());
                        let user = &t[1..end];
                        let home = match user {
                            "" => self.home_str.clone(),
                            "root" => "/root".into(),
                            u if u
                                .chars()
                                .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c)) =>
                            {
                                format!("/home/{u}")
                            }
                            _ => t[..end].to_owned(),
                        };
                        s.push_str(&home);
                        s.push_str(&t[end..]);
                    } else if let Some(eq) = t.find("=~").filter(|_| i == 0) {
                        // `--opt=~/x` and `X=~/x`: bash expands a tilde after `=` here too.
                        s.push_str(&t[..eq + 1]);
                        s.push_str(&self.home_str);
                        s.push_str(&t[eq + 2..]);
                    } else {
                        s.push_str(t);
                    }
                }
                Part::Quoted(t) => s.push_str(t),
                Part::Var { name, default } => match self.var(name, st) {
                    Some(v) => s.push_str(&v),
                    None => match default {
                        Some(d) => {
                            let d = self.expand(d, st, depth).join(" ");
                            s.push_str(&d);
                        }
                        None => s.push(UNK),
                    },
                },
                Part::Subst(inner) => {
                    let mut sub = st.clone();
                    self.script(inner, &mut sub, depth + 1);
                    match self.subst_value(inner, &sub) {
                        Some(v) => s.push_str(&v),
                        None => s.push(UNK),
                    }
                }
                Part::Unknown => s.push(UNK),
            }
        }
        if !s.contains(BRACE_OPEN) {
            let s: String = s
                .chars()
                .map(|c| {
                    if matches!(c, BRACE_SEP | BRACE_CLOSE) {
                        shell::unsentinel(c)
                    } else {
                        c
                    }
                })
                .collect();
            return vec![s];
        }
        shell::brace_expand(&s, 64)
    }

    fn var(&self, name: &str, st: &ShState) -> Option<String> {
        if let Some(v) = st.vars.get(name) {
            return Some(v.clone());
        }
        match name {
            "HOME" => Some(self.home_str.clone()),
            "PWD" => st.cwd.clone(),
            "XDG_CONFIG_HOME" => Some(format!("{}/.config", self.home_str)),
            _ => None,
        }
    }

    /// The value of `$(echo x)`, `$(printf %s x)` or `$(pwd)`; `None` otherwise.
    fn subst_value(&mut self, inner: &Script, st: &ShState) -> Option<String> {
        let [Node::Simple(s)] = inner.as_slice() else {
            return None;
        };
        if !s.redirs.is_empty() {
            return None;
        }
        let argv: Vec<String> = s
            .words
            .iter()
            .flat_map(|w| self.expand(w, st, MAX_DEPTH))
            .collect();
        match argv.first().map(String::as_str) {
            Some("echo") => Some(
                argv[1..]
                    .iter()
                    .filter(|a| !a.starts_with('-'))
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(" "),
            ),
            Some("printf") if argv.len() == 3 && argv[1] == "%s" => Some(argv[2].clone()),
            Some("pwd") => st.cwd.clone(),
            _ => None,
        }
    }

    /// Scans free text (interpreter code, unparsable commands) for path-like tokens that name
    /// a protected location.
    fn scan_text(&mut self, text: &str, st: &ShState, what: &str) {
        let base = st.base();
        for tok in text.split(|c: char| c.is_whitespace() || "'\"`()[]{},;=<>|&:+!".contains(c)) {
            let tok = tok.trim_start_matches('@');
            if tok.is_empty() || !looks_like_path(tok) && !tok.contains('.') {
                continue;
            }
            let t = self.expand_plain(tok);
            if self.path(&t, &base, Access::Write, what) {
                return;
            }
        }
    }

    fn dispatch(
        &mut self,
        argv: &[String],
        st: &mut ShState,
        cx: &CmdCtx<'_>,
    ) -> Option<Vec<String>> {
        if self.hit.is_some() || argv.is_empty() || cx.depth > MAX_DEPTH {
            return None;
        }
        let base = st.base();
        let prog = argv[0].rsplit('/').next().unwrap_or("").to_owned();
        let args = &argv[1..];
        if has_sentinel(&prog) {
            self.generic(
                args,
                &base,
                Access::Write,
                "a command whose name is computed at run time, argument",
            );
            return None;
        }
        let p = prog.as_str();
        let what = format!("`{p}`");
        match p {
            // Control keywords: look through them.
            "if" | "then" | "else" | "elif" | "do" | "while" | "until" | "!" | "{" | "time"
            | "}" | "fi" | "done" | "esac" => {
                return self.dispatch(args, st, cx);
            }
            "for" | "case" | "select" | "function" | "in" | ";;" => {}
            // Listing, printing, testing: arguments are not read or written.
            "echo" | "printf" => {
                let words: Vec<String> = if p == "printf" {
                    args.iter().skip(1).cloned().collect()
                } else {
                    args.iter()
                        .filter(|a| !a.starts_with('-'))
                        .cloned()
                        .collect()
                };
                return Some(words);
            }
            "ls" | "ll" | "la" | "dir" | "tree" | "stat" | "file" | "test" | "[" | "[["
            | "which" | "type" | "whereis" | "true" | "false" | "pwd" | "realpath" | "readlink"
            | "basename" | "dirname" | "du" | "df" | "exit" | "return" | "local" | "set"
            | "shift" | "sleep" | "date" | "whoami" | "id" | "uname" | "printenv" | "alias"
            | "hash" | "wait" | "read" | "mktemp" | "seq" | "yes" | "clear" | "history"
            | "jobs" | "kill" | "ps" | "fd" | "locate" => {
                if p == "read" {
                    for a in args.iter().filter(|a| !a.starts_with('-')) {
                        st.vars.insert(a.clone(), UNK.to_string());
                    }
                }
            }
            "cd" | "pushd" | "popd" => {
                let target = args
                    .iter()
                    .find(|a| !a.starts_with('-') || a.as_str() == "-");
                st.cwd = match (p, target.map(String::as_str)) {
                    ("popd", _) | (_, Some("-")) => None,
                    (_, None) => Some(self.home_str.clone()),
                    (_, Some(t)) if has_sentinel(t) && !t.starts_with('/') && st.cwd.is_none() => {
                        None
                    }
                    (_, Some(t)) => Some(join(&split_abs(t, &base))),
                };
            }
            "export" | "readonly" | "declare" | "typeset" => {
                for a in args.iter().filter(|a| !a.starts_with('-')) {
                    if let Some((k, v)) = a.split_once('=') {
                        st.vars.insert(k.to_owned(), v.to_owned());
                    }
                }
            }
            "unset" => {
                for a in args {
                    st.vars.insert(a.clone(), UNK.to_string());
                }
            }
            // Wrappers: analyse the wrapped command.
            "sudo" | "doas" | "sudoedit" => {
                if p == "sudoedit"
                    || args
                        .iter()
                        .take_while(|a| a.starts_with('-'))
                        .any(|a| a == "-e" || a == "--edit")
                {
                    let files: Vec<String> = args
                        .iter()
                        .filter(|a| !a.starts_with('-'))
                        .cloned()
                        .collect();
                    self.generic(&files, &base, Access::Write, "`sudoedit` of");
                    return None;
                }
                let rest = skip_options(
                    args,
                    &[
                        "-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U", "-T", "-R", "--user",
                        "--group",
                    ],
                );
                return self.dispatch(rest, st, cx);
            }
            "env" => {
                let mut i = 0;
                let mut sub = st.clone();
                while i < args.len() {
                    let a = &args[i];
                    if a == "-C" || a == "--chdir" {
                        if let Some(d) = args.get(i + 1) {
                            sub.cwd = Some(join(&split_abs(d, &base)));
                        }
                        i += 2;
                    } else if a == "-u" || a == "--unset" {
                        i += 2;
                    } else if a == "-S" || a == "--split-string" {
                        let joined = args[i + 1..].join(" ");
                        self.nested_shell(&joined, &mut sub, cx.depth);
                        return None;
                    } else if a.starts_with('-') || a.contains('=') {
                        i += 1;
                    } else {
                        break;
                    }
                }
                return self.dispatch(&args[i..], &mut sub, cx);
            }
            "nohup" | "command" | "builtin" | "exec" | "setsid" | "unbuffer" | "caffeinate"
            | "torsocks" | "chronic" | "strace" | "ltrace" => {
                if p == "command" && args.first().is_some_and(|a| a == "-v" || a == "-V") {
                    return None;
                }
                let rest = skip_options(args, &["-o", "-e", "-p", "-s"]);
                return self.dispatch(rest, st, cx);
            }
            "nice" | "ionice" | "stdbuf" | "chrt" | "taskset" => {
                let rest = skip_options(args, &["-n", "-c", "-i", "-o", "-e", "-p"]);
                // chrt/taskset take a priority/mask operand first.
                let rest = if matches!(p, "chrt" | "taskset") && !rest.is_empty() {
                    &rest[1..]
                } else {
                    rest
                };
                return self.dispatch(rest, st, cx);
            }
            "timeout" => {
                let rest = skip_options(args, &["-s", "-k", "--signal", "--kill-after"]);
                return self.dispatch(rest.get(1..).unwrap_or(&[]), st, cx);
            }
            "xargs" => {
                let rest = skip_options(
                    args,
                    &[
                        "-I",
                        "-i",
                        "-n",
                        "-P",
                        "-d",
                        "-L",
                        "-l",
                        "-s",
                        "-E",
                        "-e",
                        "-a",
                        "--max-args",
                        "--max-procs",
                        "--delimiter",
                        "--arg-file",
                    ],
                );
                let mut full: Vec<String> = if rest.is_empty() {
                    vec!["echo".into()]
                } else {
                    rest.to_vec()
                };
                if let Some(input) = cx.input {
                    full.extend(
                        input.iter().flat_map(|s| {
                            s.split_whitespace().map(str::to_owned).collect::<Vec<_>>()
                        }),
                    );
                } else {
                    full.push(UNK.to_string());
                }
                let inner = CmdCtx { input: None, ..*cx };
                return self.dispatch(&full, st, &inner);
            }
            "eval" => {
                let joined = args.join(" ");
                self.nested_shell(&joined, st, cx.depth);
            }
            "bash" | "sh" | "zsh" | "dash" | "ksh" | "mksh" | "fish" | "busybox" | "ash" => {
                if p == "busybox" {
                    return self.dispatch(args, st, cx);
                }
                let mut i = 0;
                let mut script: Option<String> = None;
                while i < args.len() {
                    let a = &args[i];
                    if a.starts_with('-') && !a.starts_with("--") && a.contains('c') {
                        script = args.get(i + 1).cloned();
                        break;
                    }
                    if a == "-o" || a == "+o" || a == "--rcfile" || a == "--init-file" {
                        i += 2;
                        continue;
                    }
                    if !a.starts_with('-') && !a.starts_with('+') {
                        // A script file: reading it is fine; naming a protected one is not.
                        self.generic(&args[i..], &base, Access::Write, &format!("{what} script"));
                        break;
                    }
                    i += 1;
                }
                let mut sub = st.clone();
                if let Some(code) = script {
                    self.nested_shell(&code, &mut sub, cx.depth);
                }
                for body in cx.heredocs {
                    self.nested_shell(body, &mut sub, cx.depth);
                }
                if let Some(input) = cx.input {
                    self.nested_shell(&input.join(" "), &mut sub, cx.depth);
                }
            }
            "source" | "." => self.generic(args, &base, Access::Read, &format!("{what} of")),
            "python" | "python2" | "python3" | "node" | "nodejs" | "perl" | "ruby" | "php"
            | "deno" | "bun" | "lua" | "osascript" | "pwsh" | "powershell" | "tclsh"
            | "rscript" | "julia" | "awk" | "gawk" | "mawk" | "nawk" | "jshell" | "irb" => {
                if p == "bun" && args.first().is_some_and(|a| a == "pm" || a == "config") {
                    return self.pkg_manager(p, args, &base);
                }
                self.interpreter(p, args, st, cx);
            }
            "git" => self.git(args, st),
            "npm" | "pnpm" | "yarn" | "npx" | "pnpx" => {
                self.pkg_manager(p, args, &base);
            }
            "tee" => {
                let files: Vec<String> = args
                    .iter()
                    .filter(|a| !a.starts_with('-'))
                    .cloned()
                    .collect();
                self.generic(&files, &base, Access::Write, &what);
            }
            "cp" | "mv" | "install" | "ln" | "rsync" | "scp" | "link" => {
                self.copy_like(p, args, &base, st)
            }
            "dd" => {
                for a in args {
                    if let Some(f) = a.strip_prefix("of=") {
                        self.path(f, &base, Access::Write, "`dd of=`");
                    } else if let Some(f) = a.strip_prefix("if=") {
                        self.path(f, &base, Access::Read, "`dd if=`");
                    }
                }
            }
            "sed" | "gsed" => self.sed(args, st),
            "rm" | "rmdir" | "unlink" | "shred" | "truncate" | "touch" | "chmod" | "chown"
            | "chgrp" | "mkdir" | "mkfifo" | "mknod" | "setfacl" | "chattr" | "srm" | "wipe" => {
                self.writer(p, args, &base)
            }
            "find" => self.find(args, st, cx),
            "cat" | "tac" | "less" | "more" | "head" | "tail" | "wc" | "diff" | "cmp" | "comm"
            | "sort" | "uniq" | "cut" | "paste" | "base64" | "base32" | "xxd" | "od"
            | "hexdump" | "strings" | "bat" | "batcat" | "nl" | "rev" | "fold" | "fmt"
            | "md5sum" | "sha1sum" | "sha256sum" | "sha512sum" | "cksum" | "b2sum" | "iconv"
            | "column" | "zcat" | "bzcat" | "xzcat" | "zless" | "view" | "pr" | "expand"
            | "look" => {
                self.generic(args, &base, Access::Read, &what);
            }
            "grep" | "egrep" | "fgrep" | "rg" | "ag" | "ack" | "jq" | "yq" | "zgrep" => {
                // The first operand is the pattern/filter unless given by option.
                let explicit = args.iter().any(|a| {
                    a == "-e"
                        || a == "-f"
                        || a.starts_with("--regexp")
                        || a.starts_with("--file")
                        || a == "--from-file"
                });
                let mut skipped = explicit;
                let mut files = Vec::new();
                let mut i = 0;
                while i < args.len() {
                    let a = &args[i];
                    if a == "-e"
                        || a == "-f"
                        || a == "--regexp"
                        || a == "--file"
                        || a == "--from-file"
                        || a == "--arg"
                        || a == "--argjson"
                        || a == "-g"
                        || a == "--glob"
                        || a == "-t"
                        || a == "--type"
                    {
                        if a == "-f" || a == "--file" || a == "--from-file" {
                            files.extend(args.get(i + 1).cloned());
                        }
                        i += if a == "--arg" || a == "--argjson" {
                            3
                        } else {
                            2
                        };
                        continue;
                    }
                    if a.starts_with('-') {
                        files.extend(a.split_once('=').map(|(_, v)| v.to_owned()));
                    } else if !skipped {
                        skipped = true;
                    } else {
                        files.push(a.clone());
                    }
                    i += 1;
                }
                self.generic(&files, &base, Access::Read, &what);
            }
            _ => {
                if let Some(cat) = self.indirect(p, args) {
                    let (cat, path, how) = cat;
                    self.report(
                        cat,
                        path,
                        format!(
                            "`{p} {}` {how} ({})",
                            args.iter()
                                .take(3)
                                .map(|a| a.chars().map(shell::unsentinel).collect::<String>())
                                .collect::<Vec<_>>()
                                .join(" "),
                            cat.as_str()
                        ),
                    );
                    return None;
                }
                self.generic(
                    args,
                    &base,
                    Access::Write,
                    &format!("{what} (not analysed) names"),
                );
            }
        }
        None
    }

    /// Checks every argument (and `--opt=value` values, `@file`, `a:b` pieces) as a path.
    fn generic(&mut self, args: &[String], base: &str, access: Access, what: &str) {
        for a in args {
            if self.hit.is_some() {
                return;
            }
            let mut cands: Vec<&str> = Vec::with_capacity(3);
            if a.starts_with('-') {
                if let Some((_, v)) = a.split_once('=') {
                    cands.push(v);
                }
            } else {
                cands.push(a);
                if let Some((_, v)) = a.split_once('=') {
                    cands.push(v);
                }
            }
            for c in cands {
                let c = c.trim_start_matches('@');
                if self.path(c, base, access, what) {
                    return;
                }
                if c.contains(':') && !c.contains("://") {
                    for piece in c.split(':') {
                        if self.path(piece, base, access, what) {
                            return;
                        }
                    }
                }
            }
        }
    }

    fn nested_shell(&mut self, code: &str, st: &mut ShState, depth: usize) {
        if depth + 1 > MAX_DEPTH {
            return;
        }
        match shell::parse(code) {
            Ok(script) => self.script(&script, st, depth + 1),
            Err(e) => {
                let saved = std::mem::take(&mut self.origin);
                self.origin = format!(
                    "{saved} (nested code could not be parsed: {}; scanned as text)",
                    e.0
                );
                self.scan_text(code, st, "the nested code names");
                self.origin = saved;
            }
        }
    }

    fn interpreter(&mut self, p: &str, args: &[String], st: &ShState, cx: &CmdCtx<'_>) {
        let base = st.base();
        let mut in_place = false;
        let mut code: Vec<&str> = Vec::new();
        let mut files: Vec<String> = Vec::new();
        let awk = p.ends_with("awk");
        let mut i = 0;
        let mut program_seen = false;
        while i < args.len() {
            let a = args[i].as_str();
            if a.starts_with('-') && a.len() > 1 && !a.starts_with("--") {
                let flags = &a[1..];
                if (p == "perl" || p == "ruby") && flags.contains('i') {
                    in_place = true;
                }
                if awk && a == "-i" && args.get(i + 1).is_some_and(|x| x == "inplace") {
                    in_place = true;
                    i += 2;
                    continue;
                }
                let takes_code =
                    matches!(flags.chars().last(), Some('c' | 'e' | 'E' | 'p' | 'r')) && !awk;
                if takes_code || (awk && (a == "-f" || a == "-v")) {
                    if let Some(c) = args.get(i + 1) {
                        if awk && a == "-f" {
                            files.push(c.clone());
                        } else {
                            code.push(c);
                        }
                        program_seen = true;
                    }
                    i += 2;
                    continue;
                }
                i += 1;
                continue;
            }
            if a == "--eval" || a == "--print" || a == "--command" {
                code.extend(args.get(i + 1).map(String::as_str));
                program_seen = true;
                i += 2;
                continue;
            }
            if a.starts_with("--") {
                i += 1;
                continue;
            }
            if awk && !program_seen {
                code.push(a);
                program_seen = true;
            } else {
                files.push(a.to_owned());
            }
            i += 1;
        }
        let what = format!("`{p}` code (not analysed) names");
        for c in code {
            self.scan_text(c, st, &what);
        }
        for body in cx.heredocs {
            self.scan_text(body, st, &what);
        }
        if let Some(input) = cx.input {
            self.scan_text(&input.join(" "), st, &what);
        }
        let what = if in_place {
            format!("`{p} -i` edits")
        } else {
            format!("`{p}` is given")
        };
        self.generic(&files, &base, Access::Write, &what);
    }

    fn sed(&mut self, args: &[String], st: &ShState) {
        let base = st.base();
        let mut in_place = false;
        let mut script_given = false;
        let mut scripts: Vec<&str> = Vec::new();
        let mut files: Vec<String> = Vec::new();
        let mut i = 0;
        while i < args.len() {
            let a = args[i].as_str();
            if a == "-e" || a == "--expression" {
                scripts.extend(args.get(i + 1).map(String::as_str));
                script_given = true;
                i += 2;
                continue;
            }
            if a == "-f" || a == "--file" {
                files.extend(args.get(i + 1).cloned());
                script_given = true;
                i += 2;
                continue;
            }
            if let Some(v) = a.strip_prefix("--expression=") {
                scripts.push(v);
                script_given = true;
            } else if a.starts_with("--in-place") {
                in_place = true;
            } else if a == "-l" || a == "--line-length" {
                i += 1;
            } else if a.starts_with('-') && a.len() > 1 && !a.starts_with("--") {
                if a[1..].starts_with('i') || a[1..].contains('i') && !a[1..].starts_with('l') {
                    in_place = true;
                }
                if a.ends_with('e') {
                    scripts.extend(args.get(i + 1).map(String::as_str));
                    script_given = true;
                    i += 1;
                }
            } else if !script_given {
                scripts.push(a);
                script_given = true;
            } else {
                files.push(a.to_owned());
            }
            i += 1;
        }
        for s in scripts {
            self.scan_text(s, st, "`sed` script names");
        }
        let (access, what) = if in_place {
            (Access::Write, "`sed -i` edits")
        } else {
            (Access::Read, "`sed`")
        };
        self.generic(&files, &base, access, what);
    }

    fn writer(&mut self, p: &str, args: &[String], base: &str) {
        let recursive = args.iter().any(|a| {
            a == "--recursive"
                || (a.starts_with('-')
                    && !a.starts_with("--")
                    && (a.contains('r') || a.contains('R'))
                    && matches!(
                        p,
                        "rm" | "chmod" | "chown" | "chgrp" | "setfacl" | "shred" | "srm" | "wipe"
                    ))
        });
        let value_opts: &[&str] = match p {
            "truncate" => &["-s", "--size", "-r", "--reference"],
            "touch" => &["-d", "-t", "-r", "--date", "--reference"],
            "mkdir" | "mkfifo" | "mknod" => &["-m", "--mode"],
            "shred" => &["-n", "-s", "--iterations", "--size"],
            _ => &[],
        };
        let mut operands: Vec<String> = Vec::new();
        let mut i = 0;
        while i < args.len() {
            let a = &args[i];
            if value_opts.contains(&a.as_str()) {
                i += 2;
                continue;
            }
            if !a.starts_with('-') || a == "-" {
                operands.push(a.clone());
            }
            i += 1;
        }
        // chmod/chown/chgrp/setfacl/chattr: the first operand is the mode/owner/acl.
        let has_reference = args.iter().any(|a| a.starts_with("--reference"));
        if matches!(p, "chmod" | "chown" | "chgrp" | "setfacl" | "chattr")
            && !has_reference
            && !operands.is_empty()
        {
            operands.remove(0);
        }
        let access = if recursive {
            Access::Subtree
        } else {
            Access::Write
        };
        self.generic(&operands, base, access, &format!("`{p}`"));
    }

    fn copy_like(&mut self, p: &str, args: &[String], base: &str, st: &ShState) {
        let value_opts: &[&str] = match p {
            "install" => &[
                "-m", "-o", "-g", "-S", "--mode", "--owner", "--group", "--suffix",
            ],
            "rsync" => &[
                "-e",
                "--rsh",
                "--exclude",
                "--include",
                "--filter",
                "-f",
                "--rsync-path",
                "--files-from",
                "--exclude-from",
                "--include-from",
                "--chmod",
                "--chown",
                "--backup-dir",
                "--partial-dir",
                "--temp-dir",
                "-T",
                "--port",
            ],
            "scp" => &["-i", "-P", "-o", "-F", "-c", "-l", "-S", "-J"],
            _ => &["-S", "--suffix"],
        };
        let mut target_dir: Option<String> = None;
        let mut operands: Vec<String> = Vec::new();
        let mut reads: Vec<String> = Vec::new();
        let mut i = 0;
        while i < args.len() {
            let a = &args[i];
            if a == "-t" || a == "--target-directory" {
                target_dir = args.get(i + 1).cloned();
                i += 2;
                continue;
            }
            if let Some(v) = a.strip_prefix("--target-directory=") {
                target_dir = Some(v.to_owned());
            } else if value_opts.contains(&a.as_str()) {
                if matches!(
                    a.as_str(),
                    "-i" | "-F" | "--files-from" | "--exclude-from" | "--include-from"
                ) {
                    reads.extend(args.get(i + 1).cloned());
                }
                i += 2;
                continue;
            } else if a == "--" {
                operands.extend(args[i + 1..].iter().cloned());
                break;
            } else if !a.starts_with('-') {
                operands.push(a.clone());
            }
            i += 1;
        }
        self.generic(&reads, base, Access::Read, &format!("`{p}` option"));
        let remote = |s: &str| matches!(s.find(':'), Some(c) if !s[..c].contains('/'));
        let (sources, dest): (Vec<String>, Option<String>) = match (&target_dir, operands.len()) {
            (Some(d), _) => (operands.clone(), Some(format!("{d}/"))),
            (None, 0) => (vec![], None),
            (None, 1) if matches!(p, "ln" | "link") => (operands.clone(), Some("./".into())),
            (None, 1) => (operands.clone(), None),
            (None, n) => (operands[..n - 1].to_vec(), Some(operands[n - 1].clone())),
        };
        let src_access = match p {
            "mv" => Access::Subtree,
            "ln" | "link" => Access::Write,
            _ => Access::Read,
        };
        let srcs: Vec<String> = sources.iter().filter(|s| !remote(s)).cloned().collect();
        self.generic(&srcs, base, src_access, &format!("`{p}` source"));
        let Some(dest) = dest.filter(|d| !remote(d)) else {
            return;
        };
        self.path(&dest, base, Access::Write, &format!("`{p}` destination"));
        let dest_abs = join(&split_abs(&dest, base));
        let is_dir = dest.ends_with('/')
            || (!has_sentinel(&dest_abs) && self.fs.is_dir(Path::new(&dest_abs)));
        if is_dir {
            for s in &sources {
                let name = s.trim_end_matches('/').rsplit('/').next().unwrap_or(s);
                self.path(
                    &format!("{dest_abs}/{name}"),
                    base,
                    Access::Write,
                    &format!("`{p}` destination"),
                );
            }
        }
        if matches!(p, "ln" | "link") && sources.len() == 1 {
            let link = if is_dir {
                let name = sources[0]
                    .trim_end_matches('/')
                    .rsplit('/')
                    .next()
                    .unwrap_or("")
                    .to_owned();
                split_abs(&name, &dest_abs)
            } else {
                split_abs(&dest, base)
            };
            self.links.push((link, split_abs(&sources[0], &st.base())));
        }
    }

    fn find(&mut self, args: &[String], st: &mut ShState, cx: &CmdCtx<'_>) {
        let base = st.base();
        let start = args
            .iter()
            .position(|a| a.starts_with('-') || a == "(" || a == "!")
            .unwrap_or(args.len());
        let roots = &args[..start];
        let expr = &args[start..];
        let acts = expr.iter().any(|a| {
            matches!(
                a.as_str(),
                "-delete" | "-exec" | "-execdir" | "-ok" | "-okdir"
            )
        });
        let mut i = 0;
        while i < expr.len() {
            let a = expr[i].as_str();
            match a {
                "-fprint" | "-fprint0" | "-fprintf" | "-fls" => {
                    if let Some(f) = expr.get(i + 1) {
                        self.path(f, &base, Access::Write, "`find -fprint`");
                    }
                }
                "-name" | "-iname" | "-path" | "-ipath" | "-wholename" if acts => {
                    if let Some(pat) = expr.get(i + 1) {
                        // The pattern arrives unexpanded (quoted); treat glob chars as globs.
                        let pat: String = pat
                            .chars()
                            .map(|c| match c {
                                '*' => STAR,
                                '?' => ONE,
                                c => c,
                            })
                            .collect();
                        let comps: Vec<Comp> = pat
                            .split('/')
                            .filter(|c| !c.is_empty())
                            .map(norm_comp)
                            .collect();
                        if let Some(cat) = categorize(&comps) {
                            let shown: String = pat.chars().map(shell::unsentinel).collect();
                            self.report(
                                cat,
                                Some(shown.clone()),
                                format!(
                                    "`find {a} {shown}` with -delete/-exec acts on {} files",
                                    cat.as_str()
                                ),
                            );
                            return;
                        }
                    }
                }
                "-exec" | "-execdir" | "-ok" | "-okdir" => {
                    let end = expr[i + 1..]
                        .iter()
                        .position(|x| x == ";" || x == "+")
                        .map_or(expr.len(), |o| i + 1 + o);
                    let cmd: Vec<String> = expr[i + 1..end]
                        .iter()
                        .map(|x| {
                            if x == "{}" {
                                UNK.to_string()
                            } else {
                                x.clone()
                            }
                        })
                        .collect();
                    let inner = CmdCtx {
                        heredocs: &[],
                        input: None,
                        depth: cx.depth + 1,
                    };
                    self.dispatch(&cmd, st, &inner);
                    i = end;
                }
                _ => {}
            }
            i += 1;
        }
        if acts {
            self.generic(
                roots,
                &base,
                Access::Write,
                "`find` with -delete/-exec under",
            );
        }
    }

    fn git(&mut self, args: &[String], st: &ShState) {
        let mut base = st.base();
        let mut i = 0;
        while i < args.len() {
            let a = args[i].as_str();
            match a {
                "-C" => {
                    if let Some(d) = args.get(i + 1) {
                        base = join(&split_abs(d, &base));
                    }
                    i += 2;
                }
                "-c" | "--git-dir" | "--work-tree" | "--namespace" | "--exec-path" => i += 2,
                _ if a.starts_with('-') => i += 1,
                _ => break,
            }
        }
        let Some(sub) = args.get(i).map(String::as_str) else {
            return;
        };
        let rest = &args[i + 1..];
        match sub {
            "config" => {
                let readonly_opt = rest.iter().any(|a| {
                    matches!(
                        a.as_str(),
                        "--get"
                            | "--get-all"
                            | "--get-regexp"
                            | "--get-urlmatch"
                            | "--list"
                            | "-l"
                            | "--get-color"
                            | "--get-colorbool"
                    )
                });
                let mut file: Option<&str> = None;
                let mut scope = ".git/config";
                let mut operands: Vec<&str> = Vec::new();
                let mut writes_opt = false;
                let mut j = 0;
                while j < rest.len() {
                    let a = rest[j].as_str();
                    match a {
                        "--global" => scope = "~/.gitconfig",
                        "--system" => scope = "/etc/gitconfig",
                        "-f" | "--file" => {
                            file = rest.get(j + 1).map(String::as_str);
                            j += 1;
                        }
                        "--blob" | "--type" | "--default" | "--comment" | "--value" => j += 1,
                        "--unset" | "--unset-all" | "--add" | "--replace-all"
                        | "--rename-section" | "--remove-section" | "-e" | "--edit" => {
                            writes_opt = true
                        }
                        _ if a.starts_with("--file=") => file = Some(&a[7..]),
                        _ if a.starts_with('-') => {}
                        _ => operands.push(a),
                    }
                    j += 1;
                }
                let sub_verb = operands.first().copied();
                let writes = if matches!(sub_verb, Some("get" | "list")) || readonly_opt {
                    false
                } else if matches!(
                    sub_verb,
                    Some("set" | "unset" | "rename-section" | "remove-section" | "edit")
                ) {
                    true
                } else {
                    writes_opt || operands.len() >= 2
                };
                if !writes {
                    return;
                }
                match file {
                    Some(f) => {
                        self.path(f, &base, Access::Write, "`git config --file`");
                    }
                    None => self.report(
                        GitConfig,
                        Some(scope.into()),
                        format!("`git config` writes {scope} ({})", GitConfig.as_str()),
                    ),
                }
            }
            "remote"
                if matches!(
                    rest.first().map(String::as_str),
                    Some(
                        "add"
                            | "set-url"
                            | "rename"
                            | "remove"
                            | "rm"
                            | "set-head"
                            | "set-branches"
                    )
                ) =>
            {
                self.report(
                    GitConfig,
                    Some(".git/config".into()),
                    format!(
                        "`git remote {}` writes .git/config ({})",
                        rest[0],
                        GitConfig.as_str()
                    ),
                );
            }
            "credential" | "credential-store" | "credential-cache" => {
                self.report(
                    Credentials,
                    Some("~/.git-credentials".into()),
                    format!(
                        "`git {sub}` reads or writes stored credentials ({})",
                        Credentials.as_str()
                    ),
                );
            }
            "lfs" if rest.first().is_some_and(|a| a == "install") => {
                self.report(
                    GitConfig,
                    Some(".git/hooks".into()),
                    format!(
                        "`git lfs install` writes git hooks and configuration ({})",
                        GitConfig.as_str()
                    ),
                );
            }
            "diff" | "log" | "show" | "status" | "blame" | "grep" | "ls-files" | "cat-file"
            | "rev-parse" | "describe" | "shortlog" | "ls-tree" | "reflog" | "whatchanged"
            | "fetch" | "branch" | "tag" => {
                self.generic(rest, &base, Access::Read, &format!("`git {sub}`"));
            }
            _ => self.generic(rest, &base, Access::Write, &format!("`git {sub}`")),
        }
    }

    fn pkg_manager(&mut self, p: &str, args: &[String], base: &str) -> Option<Vec<String>> {
        let ops: Vec<&str> = args
            .iter()
            .map(String::as_str)
            .filter(|a| !a.starts_with('-'))
            .collect();
        let (sub, next) = match ops.as_slice() {
            ["npm", s, rest @ ..] if p == "yarn" => (*s, rest.first().copied()),
            ["pm", s, rest @ ..] if p == "bun" => (*s, rest.first().copied()),
            [s, rest @ ..] => (*s, rest.first().copied()),
            [] => return None,
        };
        let writes = match sub {
            "config" | "c" => !matches!(next, Some("get" | "list" | "ls") | None),
            "set" | "login" | "adduser" | "add-user" | "logout" | "token" => {
                p != "npx" && p != "pnpx"
            }
            _ => false,
        };
        if writes {
            self.report(Credentials, Some("~/.npmrc".into()), format!("`{p} {sub}` writes the package manager's configuration/credentials (~/.npmrc) ({})", Credentials.as_str()));
        } else {
            self.generic(args, base, Access::Write, &format!("`{p} {sub}`"));
        }
        None
    }

    /// Commands that write protected files without naming them.
    fn indirect(
        &self,
        p: &str,
        args: &[String],
    ) -> Option<(Category, Option<String>, &'static str)> {
        let ops: Vec<&str> = args
            .iter()
            .map(String::as_str)
            .filter(|a| !a.starts_with('-'))
            .collect();
        let first = ops.first().copied();
        let second = ops.get(1).copied();
        let flag = |f: &str| args.iter().any(|a| a == f);
        let some =
            |c: Category, path: &str, how: &'static str| Some((c, Some(path.to_owned()), how));
        match p {
            "crontab" => {
                // Only `crontab -l [-u user]` leaves the crontab alone.
                let user = args
                    .iter()
                    .position(|a| a == "-u")
                    .and_then(|k| args.get(k + 1));
                let other_operand = args.iter().any(|a| !a.starts_with('-') && Some(a) != user);
                let listing = flag("-l") && !flag("-r") && !flag("-e") && !other_operand;
                (!listing).then_some((
                    Scheduling,
                    Some("crontab".into()),
                    "edits the user's crontab",
                ))
            }
            "at" | "batch" => (!flag("-l")).then_some((Scheduling, None, "schedules a command")),
            "ssh-keygen" | "ssh-copy-id" | "ssh-add" => {
                some(Credentials, "~/.ssh", "reads or writes SSH keys")
            }
            "gpg" | "gpg2" => {
                const OPS: &[&str] = &[
                    "--import",
                    "--recv-keys",
                    "--receive-keys",
                    "--gen-key",
                    "--generate-key",
                    "--full-generate-key",
                    "--full-gen-key",
                    "--quick-gen-key",
                    "--quick-generate-key",
                    "--edit-key",
                    "--delete-key",
                    "--delete-keys",
                    "--delete-secret-key",
                    "--delete-secret-keys",
                    "--delete-secret-and-public-key",
                    "--export-secret-keys",
                    "--export-secret-subkeys",
                    "--import-ownertrust",
                    "--sign-key",
                    "--lsign-key",
                    "--quick-add-uid",
                    "--quick-set-expire",
                    "--passwd",
                    "--fetch-keys",
                    "--refresh-keys",
                    "--card-edit",
                ];
                args.iter().any(|a| OPS.contains(&a.as_str())).then_some((
                    Credentials,
                    Some("~/.gnupg".into()),
                    "changes or exports the GnuPG keyring",
                ))
            }
            "aws" => matches!(
                (first, second),
                (Some("configure"), _) | (Some("sso"), Some("login")) | (Some("login"), _)
            )
            .then_some((Credentials, Some("~/.aws".into()), "writes AWS credentials")),
            "docker" | "podman" | "nerdctl" => {
                matches!(first, Some("login" | "logout")).then_some((
                    Credentials,
                    Some("~/.docker/config.json".into()),
                    "writes registry credentials",
                ))
            }
            "kubectl" | "oc" => (first == Some("config")
                && !matches!(
                    second,
                    Some(
                        "view" | "get-contexts" | "get-clusters" | "get-users" | "current-context"
                    ) | None
                ))
            .then_some((
                Credentials,
                Some("~/.kube/config".into()),
                "writes the kubeconfig",
            )),
            "gh" => (first == Some("auth") && second != Some("status")).then_some((
                Credentials,
                Some("~/.config/gh".into()),
                "reads or writes GitHub credentials",
            )),
            "gcloud" => (first == Some("auth") && second != Some("list")).then_some((
                Credentials,
                Some("~/.config/gcloud".into()),
                "reads or writes Google Cloud credentials",
            )),
            "az" => matches!(
                (first, second),
                (Some("login" | "logout"), _) | (Some("account"), Some("get-access-token"))
            )
            .then_some((
                Credentials,
                Some("~/.azure".into()),
                "reads or writes Azure credentials",
            )),
            "cargo" => matches!(first, Some("login" | "logout")).then_some((
                Credentials,
                Some("~/.cargo/credentials.toml".into()),
                "writes registry credentials",
            )),
            "pip" | "pip3" => (first == Some("config")
                && matches!(second, Some("set" | "unset" | "edit")))
            .then_some((
                Credentials,
                Some("pip.conf".into()),
                "writes pip's configuration (index credentials)",
            )),
            "poetry" => (first == Some("config") && !flag("--list") && ops.len() >= 2).then_some((
                Credentials,
                Some("poetry config".into()),
                "writes poetry's configuration (credentials)",
            )),
            "opencode" => (first == Some("auth")).then_some((
                Credentials,
                Some("~/.local/share/opencode/auth.json".into()),
                "reads or writes OpenCode's provider credentials",
            )),
            "claude" => (matches!(first, Some("config" | "mcp"))
                && !matches!(second, Some("get" | "list") | None))
            .then_some((
                PermissionConfig,
                Some("~/.claude.json".into()),
                "changes Claude Code's configuration",
            )),
            "visudo" => some(Privilege, "/etc/sudoers", "edits sudoers"),
            "useradd" | "usermod" | "userdel" | "groupadd" | "groupmod" | "groupdel"
            | "gpasswd" | "passwd" | "chpasswd" | "adduser" | "deluser" | "addgroup"
            | "delgroup" | "vipw" | "vigr" | "setcap" | "chage" => {
                some(Privilege, "/etc/passwd", "changes accounts or privileges")
            }
            "chsh" => some(ShellStartup, "/etc/passwd", "changes the login shell"),
            "launchctl" => matches!(first, Some("load" | "bootstrap" | "enable" | "submit"))
                .then_some((
                    Scheduling,
                    Some("~/Library/LaunchAgents".into()),
                    "installs a launchd job",
                )),
            "systemctl" => matches!(
                first,
                Some(
                    "enable"
                        | "reenable"
                        | "link"
                        | "edit"
                        | "preset"
                        | "preset-all"
                        | "add-wants"
                        | "add-requires"
                        | "set-property"
                        | "revert"
                        | "mask"
                        | "unmask"
                )
            )
            .then_some((
                Scheduling,
                Some("~/.config/systemd".into()),
                "changes systemd units",
            )),
            "systemd-run" => args.iter().any(|a| a.starts_with("--on-")).then_some((
                Scheduling,
                None,
                "schedules a timer",
            )),
            "loginctl" => (first == Some("enable-linger")).then_some((
                Scheduling,
                None,
                "lets user services outlive the session",
            )),
            "direnv" => matches!(first, Some("allow" | "permit" | "grant")).then_some((
                ShellStartup,
                Some(".envrc".into()),
                "authorises an .envrc to run on cd",
            )),
            _ => None,
        }
    }
}

#[derive(Clone)]
struct ShState {
    /// Absolute current directory, `None` after an unknowable `cd`.
    cwd: Option<String>,
    vars: HashMap<String, String>,
}

impl ShState {
    fn base(&self) -> String {
        self.cwd.clone().unwrap_or_else(|| UNKNOWN_DIR.to_owned())
    }
}

#[derive(Clone, Copy)]
struct CmdCtx<'c> {
    heredocs: &'c [String],
    /// Words printed by an `echo`/`printf` piped into this command.
    input: Option<&'c [String]>,
    depth: usize,
}

/// Skips leading options (and the values of those in `with_value`), stopping at `--`.
fn skip_options<'s>(args: &'s [String], with_value: &[&str]) -> &'s [String] {
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        if a == "--" {
            return &args[i + 1..];
        }
        if !a.starts_with('-') || a == "-" {
            break;
        }
        i += if with_value.contains(&a) { 2 } else { 1 };
    }
    args.get(i..).unwrap_or(&[])
}

fn looks_like_path(s: &str) -> bool {
    s.starts_with('/')
        || s.starts_with('~')
        || s.starts_with('.')
        || s.contains('/')
        || s.starts_with("$HOME")
        || s.starts_with("${HOME}")
}

/// Paths named by an OpenCode/Codex patch (`*** Add File: p`, `*** Update File: p`,
/// `*** Delete File: p`, `*** Move to: p`).
fn patch_paths(text: &str) -> impl Iterator<Item = &str> {
    text.lines().filter_map(|l| {
        let l = l.trim();
        [
            "*** Add File: ",
            "*** Update File: ",
            "*** Delete File: ",
            "*** Move to: ",
        ]
        .iter()
        .find_map(|p| l.strip_prefix(p))
        .map(str::trim)
    })
}

/// String values under path-like keys (`path`, `filePath`, `target`, `dest`, `dir`, `output`,
/// `cwd`, ...), recursively.
fn collect_path_args(v: &serde_json::Value, under_path_key: bool, out: &mut Vec<String>) {
    match v {
        serde_json::Value::String(s)
            if under_path_key || looks_like_path(s) && !s.contains(char::is_whitespace) =>
        {
            out.push(s.clone())
        }
        serde_json::Value::Array(a) => a
            .iter()
            .for_each(|x| collect_path_args(x, under_path_key, out)),
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                let k = k.to_ascii_lowercase();
                let pathy = [
                    "path", "file", "dir", "dest", "target", "output", "cwd", "location", "source",
                ]
                .iter()
                .any(|p| k.contains(p));
                collect_path_args(x, pathy, out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests;
