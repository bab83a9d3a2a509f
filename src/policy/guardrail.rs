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

mod commands;
mod names;
mod shell;

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde::Deserialize;

use self::names::{categorize, norm_comp, Comp};
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
    /// c2c broker state and identity: the broker root (`~/.c2c/`, `$XDG_STATE_HOME/c2c/`),
    /// host-local approval verdicts (`approval-verdict/`, `c2c-bridge approval-reply`), and
    /// commands that act as another c2c session (`C2C_MCP_SESSION_ID=…`). A peer-triggered turn
    /// must not write the verdict a human is asked for, nor send as someone else.
    BrokerState,
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
            Category::BrokerState => "c2c broker state",
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

impl PathContext {
    /// A context for a session in `cwd`, whose worktree is `worktree` and user home `home`
    /// (all absolute). Further fields, when added, take safe defaults here, so callers and
    /// tests build contexts through this one constructor.
    pub fn new(
        cwd: impl Into<PathBuf>,
        worktree: impl Into<PathBuf>,
        home: impl Into<PathBuf>,
    ) -> PathContext {
        PathContext {
            cwd: cwd.into(),
            worktree: worktree.into(),
            home: home.into(),
        }
    }
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

// The protected-name tables and `categorize` live in `names.rs`; the per-command handlers
// (`dispatch` and what it calls) in `commands.rs`.

use Category::*;

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
    home_str: String,
    worktree: Vec<String>,
    /// Symlinks created earlier in the same command: (link, target), both lexical.
    links: Vec<(Vec<String>, Vec<String>)>,
    hit: Option<GuardrailHit>,
    /// Prefix for reasons, e.g. "bash" or "bash (could not be parsed: ...)".
    origin: String,
    /// Paths already checked in this check without a hit: (lexical components, access,
    /// whether the file system was consulted, how many `ln` links were known). An edit names
    /// its file three times (`filepath`, `patterns`, `args.filePath`); the verdict of a
    /// repeat is the same, so it is not worked out again.
    clean: HashSet<(Vec<String>, AccessKey, bool, usize)>,
    /// `canonicalize` and `read_link` answers within this one check (never across checks:
    /// links can change between two requests).
    canon_memo: RefCell<HashMap<String, Option<PathBuf>>>,
    link_memo: RefCell<HashMap<PathBuf, Option<PathBuf>>>,
    /// `home` and `worktree` components, normalised (for [`Checker::covers`]).
    home_norm: Vec<String>,
    worktree_norm: Vec<String>,
}

type AccessKey = u8;

fn access_key(a: Access) -> AccessKey {
    match a {
        Access::Read => 0,
        Access::Write => 1,
        Access::Subtree => 2,
    }
}

impl<'a> Checker<'a> {
    fn new(ctx: &'a PathContext, fs: &'a dyn FsProbe) -> Self {
        let home = path_comps(&ctx.home);
        let worktree = path_comps(&ctx.worktree);
        let norm = |comps: &[String]| comps.iter().map(|c| norm_comp(c).s.into_owned()).collect();
        Checker {
            ctx,
            fs,
            home_str: join(&home),
            home_norm: norm(&home),
            worktree_norm: norm(&worktree),
            worktree,
            links: Vec::new(),
            hit: None,
            origin: String::new(),
            clean: HashSet::new(),
            canon_memo: RefCell::new(HashMap::new()),
            link_memo: RefCell::new(HashMap::new()),
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
        let probe = !has_sentinel(raw) && !has_sentinel(base);
        let key = (lexical, access_key(access), probe, self.links.len());
        if self.clean.contains(&key) {
            return false;
        }
        let lexical = &key.0;
        // The lexical path first, then the same path through links made by `ln` earlier in
        // the command, then through the file system.
        let mut candidates: Vec<Vec<String>> = Vec::new();
        for (link, target) in &self.links {
            if lexical.len() >= link.len() && lexical[..link.len()] == link[..] {
                let mut c = target.clone();
                c.extend_from_slice(&lexical[link.len()..]);
                candidates.push(c);
            }
        }
        if probe {
            if let Some(real) = self.resolve_fs(lexical) {
                if &real != lexical {
                    candidates.push(real);
                }
            }
        }
        for comps in std::iter::once(lexical).chain(&candidates) {
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
                    let via = if comps != lexical {
                        format!(" (via {})", self.display(lexical))
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
        self.clean.insert(key);
        false
    }

    /// For recursive operations: does the path contain protected places?
    fn covers(&self, norm: &[Comp]) -> Option<Category> {
        let is_prefix_of = |whole: &[String]| {
            norm.len() <= whole.len() && norm.iter().zip(whole).all(|(c, w)| !c.opaque && c.is(w))
        };
        if is_prefix_of(&self.home_norm) {
            return Some(Credentials);
        }
        if is_prefix_of(&self.worktree_norm) {
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
            let real = self
                .canon_memo
                .borrow_mut()
                .entry(prefix)
                .or_insert_with_key(|p| self.fs.canonicalize(Path::new(p)))
                .clone();
            if let Some(real) = real {
                let mut out = path_comps(&real);
                let mut rest = &comps[k..];
                if let Some(first) = rest.first() {
                    let cand = Path::new(&join(&out)).join(first);
                    let link = self
                        .link_memo
                        .borrow_mut()
                        .entry(cand)
                        .or_insert_with_key(|c| self.fs.read_link(c))
                        .clone();
                    if let Some(t) = link {
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
        // Naming another c2c session for a command (c2c's CLI and ours take the acting session
        // from this variable) is acting as someone else.
        if assigns.iter().any(|(k, _)| k == "C2C_MCP_SESSION_ID") {
            self.report(
                Category::BrokerState,
                None,
                "sets C2C_MCP_SESSION_ID: acts as a c2c session chosen by the command (c2c broker state)".into(),
            );
            return None;
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
