//! The fail-closed guardrail: the one check that lets `peerPermissions: allow` answer "once" to
//! a tool call in a turn a peer message started (DESIGN.md, "Plugin side"; issue 10).
//!
//! Its input is **structured** ([`PermissionRequest`]: OpenCode's permission type, metadata,
//! patterns, the tool's raw arguments) plus local context ([`PathContext`]). Message text is
//! never an input. [`check`] returns `None` only when it has **shown** the request's whole
//! effect is confined; anything it cannot show returns a [`GuardrailHit`] whose `reason` says
//! why (`unmodeled program "make"`, `unresolved expansion ${F%X} at byte 17`, `writes ~/.bashrc
//! (shell start-up)`), and the request is left to OpenCode's prompt. Approval is by proof,
//! never by the absence of a match.
//!
//! # What is approved
//!
//! - **bash**: a command in the modeled subset of bash (`parse.rs`: words, quotes, `$name`,
//!   `;` `&&` `||` `|`, file redirections, comments, lower-case assignments, `cd`, `*`/`?` in
//!   the last component of an argument, expanded here against the file system) whose every
//!   simple command runs a program of the modeled table (`programs.rs`), with only the options
//!   listed there, and whose every path is confined (below). The command is analysed from
//!   `metadata.command`, the tool's raw `args.command`, and each `patterns`/`resources` entry
//!   on its own; all must pass.
//! - **edit / write / patch**: every path (metadata `filepath`, `args.filePath`, `patterns`,
//!   `resources`, patch headers) is a confined write.
//! - **read**: every path is a permitted read. **list / glob**: the directory resolves.
//!   **grep**: the directory tree holds no credentials. **todowrite / todoread**: no effect.
//! - Everything else (`external_directory`, `webfetch`, `task`, MCP tools, …) is left.
//!
//! # Paths
//!
//! Every path is resolved like the kernel does ([`FsProbe`] is the only I/O for paths; git's
//! configuration files are read for git commands, `gitconfig.rs`): component by
//! component from the real working directory, following existing symlinks (chains, relative
//! and absolute targets, dangling ones as the path they would create; more than 40 → leave),
//! applying `..` after resolution. A path through `/proc` or an unreadable directory is left,
//! and so is a file with more than one hard link (except for listing).
//! The lexically folded form is checked as well (OpenCode's edit tools fold `..` before the
//! kernel sees the path). Then, by access:
//!
//! - **write** (redirection, `touch`, `mkdir`, `cp`/`mv` destinations, `rm`, edit tools):
//!   only inside the worktree or the session directory (when that is not `/`, `$HOME` or an
//!   ancestor of them), never a protected name ([`Category`]) or a protected root (the broker
//!   root), and `/dev/null`;
//! - **read** (contents): in the worktree and the session directory, and outside them only
//!   from `/usr`, `/etc`, `/bin`, `/sbin`, `/lib*` (never `$HOME` outside the project, `/run`,
//!   `/var`, `/tmp`, other users' homes, nor `/etc`'s private entries such as `shadow`,
//!   `sudoers`, `ssh/`, `ssl/`); never credentials (by name, including `*.key`, `*.pem`,
//!   `*token*`, `*secret*`, `*_history`), c2c broker state or a `.git/config` (remote URLs
//!   may carry tokens). Recursive reads (`grep -r`, `rg`, the grep tool) walk the tree
//!   (bounded) and leave if it holds any, or a `.git` whose configuration is not shown free
//!   of credentials, or a symlink whose target is not a permitted read (a directory target
//!   must lie inside the walked tree: the reader may follow it);
//! - **list** (names and metadata only): anywhere except `/proc`.
//!
//! Names are compared per component, case-insensitively, after NFKC normalisation with
//! invisible characters removed (`names.rs`).

mod git_named;
mod gitconfig;
mod names;
pub(crate) mod parse;
pub(crate) mod programs;

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use self::names::{categorize, is_git_config_file, norm_comp, Comp};
use self::parse::{Part, Redir, RedirOp, Sep, Simple, Word};
use self::programs::{Kind, Val};

/// Why a request is not provably confined: the protected kind of location it touches, or
/// [`Category::Unproven`] when the guardrail could not show its effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Category {
    /// Permission configuration: `opencode.json[c]`, `.opencode/`, `~/.config/opencode/`.
    PermissionConfig,
    /// Agent instructions and settings other agents read: `AGENTS.md`, `CLAUDE.md`,
    /// `GEMINI.md`, `.cursorrules`, `.cursor/`, `.codex/`, `.mcp.json`, ...
    AgentInstructions,
    /// Credentials and secrets: `.env`, `.ssh/`, `.aws/`, `.npmrc`, `pip.conf`, `.yarnrc.yml`,
    /// shell histories, keyrings/, ...
    Credentials,
    /// Shell start-up files: `.bashrc`, `.bashrc.d/`, `.zshrc`, `.profile`, `~/.config/fish/`, ...
    ShellStartup,
    /// Git configuration and hooks: `.gitconfig`, `.git/` (all of it), `.husky/`.
    GitConfig,
    /// Scheduling and persistence: crontab, LaunchAgents, systemd user units
    /// (`~/.config/systemd/`, `~/.local/share/systemd/`), and tool configuration that runs code
    /// (`.vscode/`, `.devcontainer/`, `.idea/`, CI workflows, `.cargo/config.toml`, mise).
    Scheduling,
    /// Privilege: sudoers, `/etc/sudoers.d/`, accounts.
    Privilege,
    /// c2c broker state: the configured broker root, `~/.c2c/`, `$XDG_STATE_HOME/c2c/`,
    /// `approval-verdict/`, `approval-pending/`.
    BrokerState,
    /// Not a protected place: the effect could not be shown confined (unmodeled program,
    /// construct or option, unresolved expansion, a write outside the project, ...).
    Unproven,
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
            Category::Unproven => "not shown confined",
        }
    }
}

/// Why the guardrail leaves a request to OpenCode's prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuardrailHit {
    /// The protected category, or [`Category::Unproven`].
    pub category: Category,
    /// The path concerned as resolved (with `~` for `$HOME`), when one is known.
    pub path: Option<String>,
    /// One sentence for the log and the user, e.g. "bash: redirection writes ~/.bashrc (shell
    /// start-up)" or "bash: unmodeled program \"make\"".
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

/// Where paths are resolved from, and what else is protected. Paths should be absolute.
#[derive(Debug, Clone)]
pub struct PathContext {
    /// The session's directory (OpenCode `Instance.directory`): the cwd of tools.
    pub cwd: PathBuf,
    /// The worktree root (OpenCode `Instance.worktree`): base of edit/write `patterns`.
    pub worktree: PathBuf,
    /// The user's home directory (`$HOME`).
    pub home: PathBuf,
    /// Further protected roots (category [`Category::BrokerState`]): the configured c2c broker
    /// root. Default: none (`~/.c2c` and `$XDG_STATE_HOME/c2c` are protected by name).
    pub protected_roots: Vec<PathBuf>,
    /// The effective OpenCode configuration's `instructions` entries (globs: relative to the
    /// project, absolute, or `~/…`). OpenCode adds every file they match to the system prompt
    /// of later sessions, so writes to them are agent instructions. Default: none (the caller
    /// must read OpenCode's configuration to know them; see SECURITY.md, "Limits").
    pub instruction_globs: Vec<String>,
    /// The `CDPATH` bash inherits; when set and non-empty, `cd NAME` (not `/`, `./`, `../`)
    /// is left. Default: the process's `CDPATH`.
    pub cdpath: Option<String>,
    /// The `PATH` bash inherits: a relative entry, or one inside a directory `allow` may write
    /// to, makes every non-builtin program unproven (it could be a planted file). Default:
    /// the process's `PATH`.
    pub path_env: Option<String>,
    /// Whether `path_env` can be trusted (worked out on first use: it needs path resolution
    /// of every entry, and neither `PATH` nor where its entries lead can be changed by an
    /// approved request, which never writes outside the project nor creates symlinks).
    path_verdict: std::sync::OnceLock<Option<String>>,
    /// The physical roots (worked out on first use by [`check`], which probes the real file
    /// system; [`check_with`] works them out on every call): an approved request can neither
    /// move a root nor create a symlink, so they do not change under approved requests.
    roots: std::sync::OnceLock<Roots>,
    /// Whether git's configuration names a program inside the project (worked out once by
    /// [`check`]; the files are protected, so approved requests cannot change it).
    git_verdict: std::sync::OnceLock<gitconfig::Scan>,
    /// The places git's configuration names, and why it could not be read (worked out once
    /// by [`check`], like `git_verdict`: the files and every place they name are protected,
    /// so approved requests cannot change them).
    git_named: std::sync::OnceLock<(Vec<Vec<String>>, Option<String>)>,
}

/// The physical forms of a context's directories.
#[derive(Debug, Clone, Default)]
struct Roots {
    protected: Vec<Vec<String>>,
    worktree: Option<Vec<String>>,
    write_roots: Vec<Vec<String>>,
    /// The session directory, logical and physical.
    session: Option<Cwd>,
    /// `$HOME`, physical.
    home: Option<Vec<String>>,
    /// Hook directories and programs git's configuration names inside the project.
    git_protected: Vec<Vec<String>>,
}

impl PathContext {
    /// A context for a session in `cwd`, whose worktree is `worktree` and user home `home`
    /// (all absolute). `cdpath` and `path_env` default to this process's `CDPATH` and `PATH`
    /// (the bash tool inherits them); no extra protected root.
    pub fn new(
        cwd: impl Into<PathBuf>,
        worktree: impl Into<PathBuf>,
        home: impl Into<PathBuf>,
    ) -> PathContext {
        PathContext {
            cwd: cwd.into(),
            worktree: worktree.into(),
            home: home.into(),
            protected_roots: Vec::new(),
            instruction_globs: Vec::new(),
            cdpath: std::env::var("CDPATH").ok().filter(|s| !s.is_empty()),
            path_env: std::env::var("PATH").ok(),
            path_verdict: std::sync::OnceLock::new(),
            roots: std::sync::OnceLock::new(),
            git_verdict: std::sync::OnceLock::new(),
            git_named: std::sync::OnceLock::new(),
        }
    }

    /// Adds a protected root (e.g. the configured broker root).
    pub fn with_protected_root(mut self, root: impl Into<PathBuf>) -> PathContext {
        self.protected_roots.push(root.into());
        self.roots = std::sync::OnceLock::new();
        self
    }

    /// Sets the OpenCode `instructions` globs ([`PathContext::instruction_globs`]): writes to
    /// a path they match (case-insensitively; a relative glob against the path relative to the
    /// worktree or any directory below it, as OpenCode searches up from the session
    /// directory) are left as agent instructions. `[…]` and `{…}` groups match like `*`
    /// (wider, fail closed).
    pub fn with_instruction_globs(mut self, globs: Vec<String>) -> PathContext {
        self.instruction_globs = globs;
        self
    }

    /// Sets the inherited `CDPATH` (`None` or empty: unset).
    pub fn with_cdpath(mut self, cdpath: Option<String>) -> PathContext {
        self.cdpath = cdpath.filter(|s| !s.is_empty());
        self
    }

    /// Sets the inherited `PATH`.
    pub fn with_path_env(mut self, path: Option<String>) -> PathContext {
        self.path_env = path;
        self.path_verdict = std::sync::OnceLock::new();
        self
    }
}

/// What `lstat` found at a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Node {
    /// Nothing there (`ENOENT`, `ENOTDIR`).
    Missing,
    /// A directory.
    Dir,
    /// A regular file.
    File,
    /// A regular file with more than one hard link: the same contents live under another
    /// name, perhaps a protected one, so reading or writing it is not shown confined.
    MultiLinked,
    /// A symbolic link (not followed).
    Symlink,
    /// A device, FIFO or socket.
    Other,
    /// It could not be looked at (permission denied, I/O error): resolution stops, the
    /// request is left.
    Unknown,
}

/// The file-system access the guardrail needs, injectable for tests. Nothing else does I/O.
pub trait FsProbe {
    /// `lstat(2)`: what is at `p`, symlinks not followed.
    fn lstat(&self, p: &Path) -> Node;
    /// `readlink(2)`: the target of a symlink.
    fn read_link(&self, p: &Path) -> Option<PathBuf>;
    /// The entries of directory `p` (names, and what each is, not followed); `None` when it
    /// cannot be read.
    fn read_dir(&self, p: &Path) -> Option<Vec<(std::ffi::OsString, Node)>>;
    /// The contents of a small text file (a git configuration file), symlinks followed;
    /// `None` when it cannot be read. The default reads nothing: an existing git configuration
    /// file that cannot be read leaves every write and every git command.
    fn read_file(&self, _p: &Path) -> Option<String> {
        None
    }
}

/// The real file system.
#[derive(Debug, Clone, Copy, Default)]
pub struct RealFs;

fn node_of_meta(m: &std::fs::Metadata) -> Node {
    use std::os::unix::fs::MetadataExt;
    match node_of(m.file_type()) {
        Node::File if m.nlink() > 1 => Node::MultiLinked,
        n => n,
    }
}

fn node_of(ft: std::fs::FileType) -> Node {
    if ft.is_symlink() {
        Node::Symlink
    } else if ft.is_dir() {
        Node::Dir
    } else if ft.is_file() {
        Node::File
    } else {
        Node::Other
    }
}

impl FsProbe for RealFs {
    fn lstat(&self, p: &Path) -> Node {
        match std::fs::symlink_metadata(p) {
            Ok(m) => node_of_meta(&m),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
                ) =>
            {
                Node::Missing
            }
            Err(_) => Node::Unknown,
        }
    }
    fn read_link(&self, p: &Path) -> Option<PathBuf> {
        std::fs::read_link(p).ok()
    }
    fn read_dir(&self, p: &Path) -> Option<Vec<(std::ffi::OsString, Node)>> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(p).ok()? {
            let e = e.ok()?;
            let node = e.file_type().map(node_of).unwrap_or(Node::Unknown);
            out.push((e.file_name(), node));
        }
        Some(out)
    }
    fn read_file(&self, p: &Path) -> Option<String> {
        use std::io::Read;
        let mut s = String::new();
        std::fs::File::open(p)
            .ok()?
            .take(1 << 20)
            .read_to_string(&mut s)
            .ok()?;
        Some(s)
    }
}

/// Checks one permission request against the real file system. `None`: approve once (the
/// whole effect is shown confined). See the module doc.
pub fn check(req: &PermissionRequest, ctx: &PathContext) -> Option<GuardrailHit> {
    let mut c = Checker::new(ctx, &RealFs, true);
    c.request(req).err().map(tidy)
}

/// Longest reason kept (characters): reasons quote words of the request, which a peer chose.
const MAX_REASON: usize = 300;

/// Bounds the reason's length and replaces control characters (it is logged and shown).
fn tidy(mut h: GuardrailHit) -> GuardrailHit {
    if h.reason.chars().count() > MAX_REASON || h.reason.chars().any(char::is_control) {
        let mut r: String = h
            .reason
            .chars()
            .take(MAX_REASON)
            .map(|c| if c.is_control() { '?' } else { c })
            .collect();
        if h.reason.chars().count() > MAX_REASON {
            r.push('…');
        }
        h.reason = r;
    }
    h
}

/// [`check`] with an explicit file-system probe.
pub fn check_with(
    req: &PermissionRequest,
    ctx: &PathContext,
    fs: &dyn FsProbe,
) -> Option<GuardrailHit> {
    let mut c = Checker::new(ctx, fs, false);
    c.request(req).err().map(tidy)
}

/// The protected names ([`Category`] by category; per path component, case-insensitive, after
/// normalisation) as Markdown, for SECURITY.md (a unit test keeps SECURITY.md's generated block
/// equal to it).
pub fn protected_names_markdown() -> String {
    names::markdown()
}

/// The modeled-program table as Markdown, for SECURITY.md (a unit test keeps SECURITY.md's
/// generated block equal to it).
pub fn allow_table_markdown() -> String {
    let mut s =
        String::from("| program | what `allow` approves | options accepted |\n|---|---|---|\n");
    for p in programs::PROGRAMS {
        let mut opts: Vec<String> = Vec::new();
        for o in p.opts {
            for n in o.names {
                opts.push(match o.val {
                    Val::No => format!("`{n}`"),
                    Val::Attached => format!("`{n}[=V]`"),
                    _ => format!("`{n} V`"),
                });
            }
        }
        if p.numeric_opt {
            opts.push("`-NUM`".into());
        }
        let opts = if opts.is_empty() {
            "—".to_string()
        } else {
            opts.join(" ")
        };
        s.push_str(&format!(
            "| `{}` | {} | {} |\n",
            p.name,
            p.doc.replace('|', "\\|"),
            opts
        ));
    }
    s.push_str("\n| `git` subcommand | operands | options accepted |\n|---|---|---|\n");
    for g in programs::GIT {
        let operands = match g.operands {
            None => "none",
            Some(Kind::List) => "paths (names only)",
            Some(Kind::Read) => "revisions or paths (read; no `rev:path`)",
            Some(_) => "revisions",
        };
        let mut opts: Vec<String> = Vec::new();
        for o in g.opts {
            for n in o.names {
                opts.push(match o.val {
                    Val::No => format!("`{n}`"),
                    Val::Attached => format!("`{n}[=V]`"),
                    _ => format!("`{n} V`"),
                });
            }
        }
        let opts = if opts.is_empty() {
            "—".to_string()
        } else {
            opts.join(" ")
        };
        s.push_str(&format!("| `{}` | {operands} | {opts} |\n", g.name));
    }
    s
}

// ---------------------------------------------------------------------------------------------
// Paths

/// At most this many symlinks are followed for one path (Linux's limit).
const MAX_LINKS: usize = 40;
/// At most this many directory entries are looked at by one recursive check.
const WALK_MAX: usize = 20_000;
/// At most this many directory levels are descended by one recursive check.
const WALK_DEPTH: usize = 24;
/// At most this many possible working directories are tracked (each `cd` may fail).
const MAX_CWDS: usize = 16;

/// How a path is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    /// Names and metadata only.
    List,
    /// Contents read.
    Read,
    /// Contents read, recursively for a directory.
    ReadTree,
    /// Created, written or removed (the path itself).
    Write,
    /// Removed or moved with everything below it.
    WriteTree,
}

type Hit = GuardrailHit;

fn unproven(reason: impl Into<String>) -> Hit {
    GuardrailHit {
        category: Category::Unproven,
        path: None,
        reason: reason.into(),
    }
}

/// Lexical fold of `raw` against `base` (absolute components).
fn lexfold(base: &[String], raw: &str) -> Vec<String> {
    let mut out: Vec<String> = if raw.starts_with('/') {
        Vec::new()
    } else {
        base.to_vec()
    };
    for c in raw.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            c => out.push(c.to_string()),
        }
    }
    out
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

fn starts_with(p: &[String], prefix: &[String]) -> bool {
    p.len() >= prefix.len() && p[..prefix.len()] == *prefix
}

/// A possible working directory: as bash's logical `$PWD` and as the kernel's physical one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Cwd {
    logical: Vec<String>,
    physical: Vec<String>,
}

struct Checker<'a> {
    ctx: &'a PathContext,
    fs: &'a dyn FsProbe,
    home: Vec<String>,
    home_str: String,
    /// Physical roots writes are confined to.
    write_roots: Vec<Vec<String>>,
    /// The worktree, physical (git runs only in its repository).
    worktree: Option<Vec<String>>,
    /// Protected roots, physical and lexical.
    protected: Vec<Vec<String>>,
    /// Hook directories and programs git's configuration names (category git configuration).
    git_protected: Vec<Vec<String>>,
    // --- per analysed command
    cwds: Vec<Cwd>,
    /// Working directories in effect only if a `cd` of the current `&&` chain failed: they
    /// rejoin [`Checker::cwds`] at the next `;`, newline or `||`.
    fail_cwds: Vec<Cwd>,
    /// Source text of every simple command analysed (for `patterns`).
    covered: Vec<String>,
    /// In the command text being analysed: whether something is written, a glob expanded,
    /// git run. A write together with a glob (a file named `-r` created first) or with git (a
    /// repository planted first) is left: the check sees the file system before the command.
    /// Indices (within the command text) of the simple commands that write, glob, run git;
    /// `simple_ix` is the one being analysed.
    wrote: Vec<usize>,
    globbed: Vec<usize>,
    ran_git: Vec<usize>,
    simple_ix: usize,
    /// Whether the pipeline being analysed follows `||` (it may be skipped).
    after_or: bool,
    vars: HashMap<String, String>,
    /// Physical paths `cp`/`mv` created or replaced earlier in this command (they may be
    /// symlinks now): a later path through one is left.
    tainted: Vec<Vec<String>>,
    origin: &'static str,
    /// `lstat` and `readlink` answers within this one check (never across checks: the file
    /// system changes between requests).
    lstat_memo: RefCell<HashMap<String, Node>>,
    link_memo: RefCell<HashMap<String, Option<PathBuf>>>,
    /// The session directory, resolved once.
    session: Option<Cwd>,
    /// `$HOME`, physical.
    home_phys: Option<Vec<String>>,
    /// Places the user's git configuration names (hooks directory, included files, programs),
    /// lexical and physical: git configuration ([`git_named`]).
    git_named: Vec<Vec<String>>,
    /// Why the git configuration could not be read, if so: writes and git are then left.
    git_unknown: Option<String>,
    /// Tool paths already shown confined in this check: `(path, worktree-relative)`. An edit
    /// names its file up to three times (`filepath`, `args.filePath`, `patterns`).
    tool_done: Vec<(String, bool)>,
    /// Whether context-level results may be kept in the context (real file system only).
    cache: bool,
}

impl<'a> Checker<'a> {
    fn new(ctx: &'a PathContext, fs: &'a dyn FsProbe, cache: bool) -> Self {
        let mut c = Checker {
            ctx,
            fs,
            home: Vec::new(),
            home_str: String::new(),
            write_roots: Vec::new(),
            worktree: None,
            protected: Vec::new(),
            git_protected: Vec::new(),
            cwds: Vec::new(),
            fail_cwds: Vec::new(),
            covered: Vec::new(),
            wrote: Vec::new(),
            globbed: Vec::new(),
            ran_git: Vec::new(),
            simple_ix: 0,
            after_or: false,
            vars: HashMap::new(),
            tainted: Vec::new(),
            origin: "",
            lstat_memo: RefCell::new(HashMap::new()),
            link_memo: RefCell::new(HashMap::new()),
            session: None,
            home_phys: None,
            git_named: Vec::new(),
            git_unknown: None,
            tool_done: Vec::new(),
            cache,
        };
        if let Some(h) = ctx.home.to_str() {
            c.home = lexfold(&[], h);
            c.home_str = join(&c.home);
        }
        let roots = match ctx.roots.get() {
            Some(r) if cache => r.clone(),
            _ => {
                let r = c.roots();
                if cache {
                    let _ = ctx.roots.set(r.clone());
                }
                r
            }
        };
        c.protected = roots.protected;
        c.worktree = roots.worktree;
        c.write_roots = roots.write_roots;
        c.session = roots.session;
        c.home_phys = roots.home;
        c.git_protected = roots.git_protected;
        match ctx.git_named.get() {
            Some((named, unknown)) if cache => {
                c.git_named = named.clone();
                c.git_unknown = unknown.clone();
            }
            _ => {
                c.git_named_places();
                if cache {
                    let _ = ctx
                        .git_named
                        .set((c.git_named.clone(), c.git_unknown.clone()));
                }
            }
        }
        c
    }

    /// Reads the git configuration files (see [`git_named`]) and fills
    /// [`Checker::git_named`] / [`Checker::git_unknown`].
    fn git_named_places(&mut self) {
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let home = self.home.clone();
        let wt = self.ctx.worktree.to_str().map(|w| lexfold(&[], w));
        let mut files: Vec<(Vec<String>, usize)> = Vec::new();
        if let Some(wt) = &wt {
            let mut dot_git = wt.clone();
            dot_git.push(".git".into());
            let gitdir = match self.lstat(&join(&dot_git)) {
                Node::Dir => Some(dot_git),
                Node::Missing => None,
                Node::File | Node::MultiLinked | Node::Symlink => {
                    match self.fs.read_file(Path::new(&join(&dot_git))) {
                        Some(t) => t
                            .lines()
                            .find_map(|l| l.strip_prefix("gitdir:"))
                            .map(|g| lexfold(wt, g.trim())),
                        None => {
                            self.git_unknown = Some("cannot read the worktree's .git file".into());
                            None
                        }
                    }
                }
                _ => {
                    self.git_unknown = Some("cannot look at the worktree's .git".into());
                    None
                }
            };
            if let Some(gitdir) = gitdir {
                let mut cd = gitdir.clone();
                cd.push("commondir".into());
                let common = match self.lstat(&join(&cd)) {
                    Node::Missing | Node::Dir => gitdir.clone(),
                    _ => match self.fs.read_file(Path::new(&join(&cd))) {
                        Some(t) => lexfold(&gitdir, t.trim()),
                        None => {
                            self.git_unknown =
                                Some("cannot read the repository's commondir".into());
                            gitdir.clone()
                        }
                    },
                };
                let mut c = common;
                c.push("config".into());
                files.push((c, 0));
                let mut w = gitdir;
                w.push("config.worktree".into());
                files.push((w, 0));
            }
        }
        match env("GIT_CONFIG_GLOBAL") {
            Some(g) => files.push((lexfold(&home, &g), 0)),
            None => {
                let mut g = home.clone();
                g.push(".gitconfig".into());
                files.push((g, 0));
                let mut x = match env("XDG_CONFIG_HOME") {
                    Some(x) => lexfold(&home, &x),
                    None => {
                        let mut x = home.clone();
                        x.push(".config".into());
                        x
                    }
                };
                x.push("git".into());
                x.push("config".into());
                files.push((x, 0));
            }
        }
        if env("GIT_CONFIG_NOSYSTEM").is_none() {
            let sys = env("GIT_CONFIG_SYSTEM").unwrap_or_else(|| "/etc/gitconfig".into());
            files.push((lexfold(&[], &sys), 0));
        }
        if env("GIT_CONFIG_PARAMETERS").is_some() || env("GIT_CONFIG_COUNT").is_some() {
            self.git_unknown = Some("git configuration given in the environment".into());
        }
        let mut seen: Vec<Vec<String>> = Vec::new();
        while let Some((file, depth)) = files.pop() {
            if seen.contains(&file) || seen.len() > 64 {
                continue;
            }
            seen.push(file.clone());
            let text = match self.lstat(&join(&file)) {
                Node::Missing | Node::Dir => continue,
                Node::File | Node::MultiLinked | Node::Symlink => {
                    self.fs.read_file(Path::new(&join(&file)))
                }
                _ => None,
            };
            let Some(text) = text else {
                self.git_unknown = Some(format!(
                    "cannot read git configuration {}",
                    self.display(&file)
                ));
                continue;
            };
            let dir = file[..file.len().saturating_sub(1)].to_vec();
            for e in git_named::parse(&text) {
                for w in git_named::named_words(&e) {
                    let mut bases: Vec<Vec<String>> = vec![dir.clone()];
                    bases.extend(wt.clone());
                    for base in bases {
                        let lexical = match w.strip_prefix("~/") {
                            Some(rest) => lexfold(&home, rest),
                            None => lexfold(&base, &w),
                        };
                        let mut forms = vec![lexical.clone()];
                        if let Ok((p, _)) = self.resolve(&[], &join(&lexical), true) {
                            forms.push(p);
                        }
                        for p in forms {
                            // A name for the project itself (or above it): only a hooks
                            // directory there matters, and then no write is shown confined.
                            if self.write_roots.iter().any(|r| starts_with(r, &p)) {
                                if e.key == "hookspath" {
                                    self.git_unknown = Some(format!(
                                        "core.hooksPath {w} is the project or above it"
                                    ));
                                }
                                continue;
                            }
                            if !self.git_named.contains(&p) {
                                self.git_named.push(p);
                            }
                        }
                    }
                    if git_named::is_include(&e) && depth < git_named::MAX_INCLUDE_DEPTH {
                        let inc = match w.strip_prefix("~/") {
                            Some(rest) => lexfold(&home, rest),
                            None => lexfold(&dir, &w),
                        };
                        files.push((inc, depth + 1));
                    }
                }
            }
        }
    }

    /// git's configuration, scanned once per context by [`check`].
    fn git_scan(&self) -> gitconfig::Scan {
        match self.ctx.git_verdict.get().filter(|_| self.cache) {
            Some(v) => v.clone(),
            None => {
                let v = gitconfig::scan(&self.ctx.home, &self.ctx.worktree);
                if self.cache {
                    let _ = self.ctx.git_verdict.set(v.clone());
                }
                v
            }
        }
    }

    fn roots(&self) -> Roots {
        let mut r = Roots::default();
        // Where git's configuration says hooks or programs live (`core.hooksPath =
        // .githooks`): protected like `.git/hooks`.
        for (_, p) in self.git_scan().relative {
            if let Some(s) = p.to_str() {
                r.git_protected.push(lexfold(&[], s));
            }
            if let Some(p) = self.phys_abs(&p) {
                r.git_protected.push(p);
            }
        }
        let home_phys = self.phys_abs(&self.ctx.home);
        for p in &self.ctx.protected_roots {
            if let Some(s) = p.to_str() {
                r.protected.push(lexfold(&[], s));
            }
            if let Some(p) = self.phys_abs(p) {
                r.protected.push(p);
            }
        }
        r.worktree = self.phys_abs(&self.ctx.worktree);
        r.session = self.start_cwd(None).ok();
        r.home = home_phys.clone();
        for root in [&self.ctx.worktree, &self.ctx.cwd] {
            let Some(p) = self.phys_abs(root) else {
                continue;
            };
            let too_wide = p.is_empty()
                || starts_with(&self.home, &p)
                || home_phys.as_ref().is_some_and(|h| starts_with(h, &p))
                || r.protected.iter().any(|pr| starts_with(&p, pr))
                || categorize(&norm(&p)).is_some();
            if !too_wide && !r.write_roots.contains(&p) {
                r.write_roots.push(p);
            }
        }
        r
    }

    fn lstat(&self, p: &str) -> Node {
        if let Some(n) = self.lstat_memo.borrow().get(p) {
            return *n;
        }
        let n = self.fs.lstat(Path::new(p));
        self.lstat_memo.borrow_mut().insert(p.to_string(), n);
        n
    }

    fn read_link(&self, p: &str) -> Option<PathBuf> {
        if let Some(t) = self.link_memo.borrow().get(p) {
            return t.clone();
        }
        let t = self.fs.read_link(Path::new(p));
        self.link_memo.borrow_mut().insert(p.to_string(), t.clone());
        t
    }

    fn phys_abs(&self, p: &Path) -> Option<Vec<String>> {
        let s = p.to_str()?;
        if !s.starts_with('/') {
            return None;
        }
        self.resolve(&[], s, true).ok().map(|r| r.0)
    }

    fn display(&self, comps: &[String]) -> String {
        let s = join(comps);
        if !self.home_str.is_empty() {
            if let Some(rest) = s.strip_prefix(&self.home_str) {
                if rest.is_empty() || rest.starts_with('/') {
                    return format!("~{rest}");
                }
            }
        }
        s
    }

    fn hit(&self, reason: impl std::fmt::Display) -> Hit {
        if self.origin.is_empty() {
            unproven(reason.to_string())
        } else {
            unproven(format!("{}: {reason}", self.origin))
        }
    }

    /// Physical resolution of `raw` from `base` (physical components). Returns the components
    /// and what is there (`Missing` when some component does not exist yet).
    fn resolve(
        &self,
        base: &[String],
        raw: &str,
        follow_last: bool,
    ) -> Result<(Vec<String>, Node), String> {
        if raw.is_empty() {
            return Err("empty path".into());
        }
        let mut stack: Vec<String> = if raw.starts_with('/') {
            Vec::new()
        } else {
            base.to_vec()
        };
        let mut queue: std::collections::VecDeque<String> =
            raw.split('/').map(str::to_string).collect();
        // A trailing `/` (or `/.`) makes the kernel follow a final symlink (`rm -r link/`
        // empties the target).
        let follow_last = follow_last || raw.ends_with('/') || raw.ends_with("/.");
        let mut links = 0usize;
        let mut exists = true;
        let mut last = Node::Dir;
        while let Some(c) = queue.pop_front() {
            match c.as_str() {
                "" | "." => continue,
                ".." => {
                    // A component that does not exist yet may be created (by the tool, or an
                    // earlier command) and be resolved physically before this `..`: unknown.
                    if !exists {
                        return Err(format!(
                            "`..` after {}, which does not exist yet",
                            self.display(&stack)
                        ));
                    }
                    stack.pop();
                    continue;
                }
                _ => {}
            }
            if stack.first().is_some_and(|f| f == "proc") {
                return Err("path through /proc".into());
            }
            stack.push(c);
            if !exists {
                last = Node::Missing;
                continue;
            }
            let here = join(&stack);
            // A trailing `/` or `/.` makes the kernel (and `rm`, `mv`, ...) follow a symlink
            // in the last component: only a bare last component is not followed.
            let is_last = queue.is_empty();
            match self.lstat(&here) {
                Node::Missing => {
                    exists = false;
                    last = Node::Missing;
                }
                Node::Unknown => return Err(format!("cannot look at {}", self.display(&stack))),
                Node::Symlink if !is_last || follow_last => {
                    links += 1;
                    if links > MAX_LINKS {
                        return Err("too many levels of symbolic links".into());
                    }
                    let Some(target) = self.read_link(&here) else {
                        return Err(format!("cannot read link {}", self.display(&stack)));
                    };
                    let Some(t) = target.to_str() else {
                        return Err("non-UTF-8 link target".into());
                    };
                    if t.is_empty() {
                        return Err("empty link target".into());
                    }
                    stack.pop();
                    if t.starts_with('/') {
                        stack.clear();
                    }
                    for (k, part) in t.split('/').enumerate() {
                        queue.insert(k, part.to_string());
                    }
                }
                n => last = n,
            }
        }
        if stack.first().is_some_and(|f| f == "proc") {
            return Err("path through /proc".into());
        }
        Ok((stack, last))
    }

    /// Checks one path used with `access` from every possible working directory; returns the
    /// physical resolutions (from each cwd).
    fn path(
        &mut self,
        raw: &str,
        access: Access,
        follow_last: bool,
        what: &str,
    ) -> Result<Vec<(Vec<String>, Node)>, Hit> {
        let cwds = self.cwds.clone();
        let mut out = Vec::new();
        for cwd in &cwds {
            let r = self.path_from(cwd, raw, access, follow_last, what)?;
            if !out.contains(&r) {
                out.push(r);
            }
        }
        Ok(out)
    }

    fn path_from(
        &mut self,
        cwd: &Cwd,
        raw: &str,
        access: Access,
        follow_last: bool,
        what: &str,
    ) -> Result<(Vec<String>, Node), Hit> {
        let lexical = lexfold(&cwd.logical, raw);
        let mut views = Vec::with_capacity(2);
        let kernel = self
            .resolve(&cwd.physical, raw, follow_last)
            .map_err(|e| self.hit(format!("{what} {raw}: {e}")))?;
        views.push(kernel.clone());
        if raw.contains("..") || cwd.logical != cwd.physical {
            let folded = self
                .resolve(&[], &join(&lexical), follow_last)
                .map_err(|e| self.hit(format!("{what} {raw}: {e}")))?;
            if folded != kernel {
                views.push(folded);
            }
        }
        // Belt and braces: the lexical form names no protected place either.
        self.judge(&lexical, Node::Missing, access, what, true)?;
        for (comps, node) in &views {
            if self.tainted.iter().any(|t| starts_with(comps, t)) {
                return Err(self.hit(format!(
                    "{what} {}: created or replaced by cp/mv earlier in the command",
                    self.display(comps)
                )));
            }
            self.judge(comps, *node, access, what, false)?;
        }
        Ok(kernel)
    }

    fn protected_hit(&self, comps: &[String], access: Access, what: &str) -> Option<Hit> {
        let verb = match access {
            Access::List => "lists",
            Access::Read | Access::ReadTree => "reads",
            Access::Write | Access::WriteTree => "writes",
        };
        let cat = if matches!(access, Access::Read | Access::ReadTree) && names::etc_private(comps)
        {
            // Secrets of the system (red-team R2), readable when OpenCode runs as root.
            Some(Category::Credentials)
        } else if self.protected.iter().any(|p| starts_with(comps, p)) {
            Some(Category::BrokerState)
        } else if matches!(access, Access::Write | Access::WriteTree)
            && self.instruction_glob_hit(comps)
        {
            // Named by OpenCode's `instructions` (red-team R5).
            Some(Category::AgentInstructions)
        } else if self.git_named.iter().any(|p| starts_with(comps, p))
            || self.git_protected.iter().any(|p| starts_with(comps, p))
        {
            // Named by the user's git configuration: hooks, included files, programs.
            Some(Category::GitConfig)
        } else {
            categorize(&norm(comps))
        }?;
        // A `.git/config` may hold a token in a remote URL or an extraheader (red-team R3).
        let reads_ok = !matches!(cat, Category::Credentials | Category::BrokerState)
            && !is_git_config_file(&norm(comps));
        if matches!(access, Access::List)
            || (matches!(access, Access::Read | Access::ReadTree) && reads_ok)
        {
            return None;
        }
        let shown = self.display(comps);
        // A read left although its category protects writes only: `.git/config`, whose
        // contents may be a secret.
        let extra = if matches!(access, Access::Read | Access::ReadTree)
            && !matches!(cat, Category::Credentials | Category::BrokerState)
        {
            ", may hold credentials"
        } else {
            ""
        };
        let reason = format!("{what} {verb} {shown} ({}{extra})", cat.as_str());
        Some(GuardrailHit {
            category: cat,
            path: Some(shown),
            reason: if self.origin.is_empty() {
                reason
            } else {
                format!("{}: {reason}", self.origin)
            },
        })
    }

    /// Whether `comps` (absolute) is matched by one of the context's `instructions` globs.
    fn instruction_glob_hit(&self, comps: &[String]) -> bool {
        if self.ctx.instruction_globs.is_empty() {
            return false;
        }
        let lower: Vec<String> = comps.iter().map(|c| c.to_lowercase()).collect();
        let path: Vec<&str> = lower.iter().map(String::as_str).collect();
        let mut bases: Vec<Vec<String>> = vec![self.ctx_worktree_lexical()];
        bases.extend(self.worktree.clone());
        self.ctx.instruction_globs.iter().any(|g| {
            let g = g.to_lowercase();
            let (abs, rest) = if let Some(r) = g.strip_prefix("~/") {
                (Some(self.home.clone()), r.to_string())
            } else if g.starts_with('/') {
                (Some(Vec::new()), g.clone())
            } else {
                (None, g.clone())
            };
            let pat: Vec<&str> = rest
                .split('/')
                .filter(|c| !c.is_empty() && *c != ".")
                .collect();
            match abs {
                Some(prefix) => {
                    let prefix: Vec<String> = prefix.iter().map(|c| c.to_lowercase()).collect();
                    starts_with(&lower, &prefix) && glob_comps(&pat, &path[prefix.len()..])
                }
                None => bases.iter().any(|b| {
                    let b: Vec<String> = b.iter().map(|c| c.to_lowercase()).collect();
                    starts_with(&lower, &b)
                        && (b.len()..path.len()).any(|k| glob_comps(&pat, &path[k..]))
                }),
            }
        })
    }

    /// Judges one resolved (or, with `lexical_only`, lexical) path.
    fn judge(
        &mut self,
        comps: &[String],
        node: Node,
        access: Access,
        what: &str,
        lexical_only: bool,
    ) -> Result<(), Hit> {
        if let Some(h) = self.protected_hit(comps, access, what) {
            return Err(h);
        }
        if lexical_only {
            return Ok(());
        }
        let is_dev_null = comps.len() == 2 && comps[0] == "dev" && comps[1] == "null";
        if comps.first().is_some_and(|f| f == "dev") && !is_dev_null && access != Access::List {
            return Err(self.hit(format!("{what} device path {}", join(comps))));
        }
        if node == Node::MultiLinked && access != Access::List {
            return Err(self.hit(format!(
                "{what} {}: the file has other hard links",
                self.display(comps)
            )));
        }
        if matches!(access, Access::Read | Access::ReadTree) {
            // Under $HOME, outside the project, any file may hold a secret under a name no
            // table knows (G2 finding 6): not shown harmless.
            let under_home = starts_with(comps, &self.home)
                || self
                    .home_phys
                    .as_ref()
                    .is_some_and(|h| starts_with(comps, h));
            let in_project = self.write_roots.iter().any(|r| starts_with(comps, r));
            if under_home && !in_project {
                return Err(self.hit(format!(
                    "{what} reads {}: reads outside the project under $HOME are not shown harmless",
                    self.display(comps)
                )));
            }
            // Outside the project, only system locations are read (red-team R2: container
            // secrets in /run/secrets, /var/run/secrets, other users' homes, ...).
            if !in_project && !is_dev_null && !names::system_read(comps) {
                return Err(self.hit(format!(
                    "{what} reads {}: outside the project only {} are read",
                    self.display(comps),
                    names::SYSTEM_READ_DOC
                )));
            }
        }
        match access {
            Access::List => Ok(()),
            // A directory given to a reading program is read through (`diff -N DIR X` prints
            // every file of DIR): judged like a recursive read.
            Access::Read | Access::ReadTree => {
                if node == Node::Dir {
                    self.walk(comps, false, what)
                } else {
                    Ok(())
                }
            }
            Access::Write | Access::WriteTree => {
                if is_dev_null && access == Access::Write {
                    return Ok(());
                }
                self.wrote.push(self.simple_ix);
                if let Some(why) = &self.git_unknown {
                    return Err(self.hit(format!(
                        "{what} writes {}: {why} (a hook or included file may be named there)",
                        self.display(comps)
                    )));
                }
                let strict = access == Access::WriteTree;
                let inside = self
                    .write_roots
                    .iter()
                    .any(|r| starts_with(comps, r) && (!strict || comps.len() > r.len()));
                if !inside {
                    return Err(self.hit(format!(
                        "{what} writes {}: outside the project",
                        self.display(comps)
                    )));
                }
                if access == Access::WriteTree && node == Node::Dir {
                    self.walk(comps, true, what)?;
                }
                Ok(())
            }
        }
    }

    /// Walks the tree at `root` (not following symlinks, bounded) and fails on any protected
    /// name (`write`) or any credentials / broker state (read).
    fn walk(&mut self, root: &[String], write: bool, what: &str) -> Result<(), Hit> {
        let access = if write {
            Access::WriteTree
        } else {
            Access::ReadTree
        };
        let mut stack: Vec<(Vec<String>, usize)> = vec![(root.to_vec(), 0)];
        let mut seen = 0usize;
        // Symlinks met, judged after the tree (whose protected names come first).
        let mut links: Vec<Vec<String>> = Vec::new();
        while let Some((dir, depth)) = stack.pop() {
            let Some(entries) = self.fs.read_dir(Path::new(&join(&dir))) else {
                return Err(self.hit(format!(
                    "{what} {}: cannot read the directory",
                    self.display(&dir)
                )));
            };
            for (name, node) in entries {
                seen += 1;
                if seen > WALK_MAX {
                    return Err(self.hit(format!(
                        "{what} {}: more than {WALK_MAX} entries to check",
                        self.display(root)
                    )));
                }
                let Some(name) = name.to_str() else {
                    return Err(self.hit(format!(
                        "{what}: non-UTF-8 name under {}",
                        self.display(&dir)
                    )));
                };
                let mut p = dir.clone();
                p.push(name.to_string());
                if let Some(h) = self.protected_hit(&p, access, what) {
                    return Err(h);
                }
                if node == Node::Unknown {
                    return Err(self.hit(format!("{what}: cannot look at {}", self.display(&p))));
                }
                // A read walk skips `.git` (objects, not credentials) once its configuration is
                // shown to hold none (`grep -r` reads `.git/config`: red-team R3); a write walk
                // never gets there (`.git` is protected).
                if node == Node::Dir && !write && name == ".git" {
                    self.git_dir_clean(&p, what)?;
                }
                // A symlink met in a read walk: the reader may follow it (`grep -R`, `rg -L`,
                // OpenCode's grep tool; red-team R6). Its target is judged like a read: a
                // directory outside the walked tree, or a target that cannot be resolved, is
                // left.
                if node == Node::Symlink && !write {
                    links.push(p.clone());
                }
                if node == Node::Dir && (write || name != ".git") {
                    if depth + 1 > WALK_DEPTH {
                        return Err(
                            self.hit(format!("{what} {}: tree too deep", self.display(root)))
                        );
                    }
                    stack.push((p, depth + 1));
                }
            }
        }
        for link in links {
            self.walk_link(root, &link, what)?;
        }
        Ok(())
    }

    /// A read walk of `root` meets the symlink `link`: its target must be a permitted read and,
    /// if a directory, lie inside `root` (walked anyway); otherwise the walk is left.
    fn walk_link(&mut self, root: &[String], link: &[String], what: &str) -> Result<(), Hit> {
        let shown = self.display(link);
        let (target, node) = self
            .resolve(&[], &join(link), true)
            .map_err(|e| self.hit(format!("{what} {shown}: symlink in the tree: {e}")))?;
        if let Some(h) = self.protected_hit(&target, Access::Read, what) {
            return Err(h);
        }
        match node {
            Node::Missing => Ok(()),
            Node::Dir if starts_with(&target, root) => Ok(()),
            Node::Dir => Err(self.hit(format!(
                "{what} {shown}: a symlink in the tree leads to the directory {} outside it",
                self.display(&target)
            ))),
            node => self.judge(&target, node, Access::Read, what, false),
        }
    }

    /// A recursive read passes through the git directory `dir`: its `config` and
    /// `config.worktree` must be readable and show no credential (a URL with a user part, an
    /// `extraheader`, a `[credential]` section, an include, words like token/password), and
    /// it must hold no `modules/` or `worktrees/` (more configuration files).
    fn git_dir_clean(&mut self, dir: &[String], what: &str) -> Result<(), Hit> {
        for sub in ["modules", "worktrees"] {
            let mut p = dir.to_vec();
            p.push(sub.into());
            if self.lstat(&join(&p)) != Node::Missing {
                return Err(self.hit(format!(
                    "{what} reads {}: more git configuration files there may hold credentials",
                    self.display(&p)
                )));
            }
        }
        for f in ["config", "config.worktree"] {
            let mut p = dir.to_vec();
            p.push(f.into());
            let node = self.lstat(&join(&p));
            if node == Node::Missing {
                continue;
            }
            let clean = node == Node::File
                && self
                    .fs
                    .read_file(Path::new(&join(&p)))
                    .is_some_and(|t| !gitconfig::may_hold_credentials(&t));
            if !clean {
                return Err(GuardrailHit {
                    category: Category::Credentials,
                    path: Some(self.display(&p)),
                    reason: format!(
                        "{}{what} reads {}: git configuration that may hold credentials (a URL with a user part, an extraheader, an include)",
                        if self.origin.is_empty() { String::new() } else { format!("{}: ", self.origin) },
                        self.display(&p)
                    ),
                });
            }
        }
        Ok(())
    }

    // -----------------------------------------------------------------------------------------
    // Requests

    fn request(&mut self, req: &PermissionRequest) -> Result<(), Hit> {
        let kind = req.permission.as_str();
        let args = &req.args;
        let arg_str = |k: &str| args.get(k).and_then(|v| v.as_str());
        let start = match &self.session {
            Some(s) => s.clone(),
            None => self.start_cwd(None)?,
        };
        self.cwds = vec![start];
        match kind {
            "bash" => {
                let mut cmds: Vec<&str> = Vec::new();
                cmds.extend(req.command.as_deref());
                cmds.extend(arg_str("command"));
                if args.get("command").is_some_and(|c| !c.is_string()) {
                    return Err(unproven("bash: the command argument is not a string"));
                }
                let patterns: Vec<&str> = req
                    .patterns
                    .iter()
                    .chain(&req.resources)
                    .map(String::as_str)
                    .collect();
                if cmds.is_empty() && patterns.is_empty() {
                    return Err(unproven("bash: no command to analyse"));
                }
                let workdir = match args.get("workdir") {
                    None | Some(serde_json::Value::Null) => None,
                    Some(serde_json::Value::String(w)) => Some(w.as_str()),
                    Some(_) => return Err(unproven("bash: workdir is not a string")),
                };
                let start = match (workdir, &self.session) {
                    (None, Some(s)) => s.clone(),
                    _ => self.start_cwd(workdir)?,
                };
                let mut done: Vec<&str> = Vec::new();
                self.origin = "bash";
                for cmd in cmds {
                    if !done.contains(&cmd) {
                        done.push(cmd);
                        self.command(cmd, &start)?;
                    }
                }
                // OpenCode's patterns are its own parser's simple commands: one that is the
                // text (or a leading part) of a simple command analysed above is covered;
                // any other is analysed on its own (it may be a command our parse did not see).
                for p in patterns {
                    let p = p.trim_end_matches('*').trim_end();
                    let covered = self.covered.iter().any(|c| {
                        c == p || (c.starts_with(p) && c[p.len()..].starts_with([' ', '\t']))
                    });
                    if !covered && !done.contains(&p) {
                        done.push(p);
                        self.command(p, &start)?;
                    }
                }
                Ok(())
            }
            "edit" | "write" | "multiedit" | "patch" | "apply_patch" => {
                self.origin = "edit";
                let mut n = 0;
                for p in req
                    .filepath
                    .iter()
                    .map(String::as_str)
                    .chain(arg_str("filePath"))
                    .chain(arg_str("filepath"))
                    .chain(arg_str("path"))
                {
                    n += 1;
                    self.tool_path(p, Access::Write, false)?;
                }
                for p in req.patterns.iter().chain(&req.resources) {
                    n += 1;
                    self.tool_path(p, Access::Write, true)?;
                }
                for key in ["patchText", "patch_text", "patch", "input"] {
                    if let Some(text) = arg_str(key) {
                        let paths = patch_paths(text).map_err(unproven)?;
                        if paths.is_empty() {
                            return Err(unproven("patch: no file header found"));
                        }
                        for p in paths {
                            n += 1;
                            self.tool_path(p, Access::Write, false)?;
                        }
                    }
                }
                if n == 0 {
                    return Err(unproven(format!("{kind}: no path to check")));
                }
                Ok(())
            }
            "read" => {
                self.origin = "read";
                let mut n = 0;
                for p in req
                    .filepath
                    .iter()
                    .map(String::as_str)
                    .chain(arg_str("filePath"))
                    .chain(arg_str("path"))
                {
                    n += 1;
                    self.tool_path(p, Access::Read, false)?;
                }
                for p in req.patterns.iter().chain(&req.resources) {
                    n += 1;
                    self.tool_path(p, Access::Read, true)?;
                }
                if n == 0 {
                    return Err(unproven("read: no path to check"));
                }
                Ok(())
            }
            "list" | "glob" | "grep" => {
                self.origin = if kind == "grep" { "grep" } else { "list" };
                let access = if kind == "grep" {
                    Access::ReadTree
                } else {
                    Access::List
                };
                match arg_str("path") {
                    Some(p) => self.tool_path(p, access, false),
                    None => {
                        if args.get("path").is_some_and(|v| !v.is_null()) {
                            return Err(unproven(format!("{kind}: path is not a string")));
                        }
                        self.tool_path(".", access, false)
                    }
                }
            }
            "todowrite" | "todoread" => Ok(()),
            other => Err(unproven(format!(
                "unmodeled tool or permission \"{}\"",
                other.chars().take(80).collect::<String>()
            ))),
        }
    }

    /// The working directory the bash tool runs in: the session directory, or its `workdir`
    /// argument resolved from it the way OpenCode does (`path.resolve`, lexical).
    fn start_cwd(&self, workdir: Option<&str>) -> Result<Cwd, Hit> {
        let Some(cwd) = self.ctx.cwd.to_str() else {
            return Err(unproven("session directory is not UTF-8"));
        };
        let mut logical = lexfold(&[], cwd);
        if let Some(w) = workdir {
            if w.contains(['~', '$']) {
                return Err(unproven(format!("bash: workdir {w} is not a plain path")));
            }
            logical = lexfold(&logical, w);
        }
        let (physical, _) = self
            .resolve(&[], &join(&logical), true)
            .map_err(|e| unproven(format!("bash: working directory: {e}")))?;
        Ok(Cwd { logical, physical })
    }

    /// A path of an edit/read/list tool: relative to the session directory, or (patterns) to
    /// the worktree.
    fn tool_path(&mut self, p: &str, access: Access, pattern: bool) -> Result<(), Hit> {
        // Within one request every path has the same access; a repeat has the same verdict.
        let key = (p.to_string(), pattern || p.starts_with('/'));
        if self.tool_done.contains(&key) {
            return Ok(());
        }
        if p.is_empty() || p.contains('\0') {
            return Err(self.hit("empty path"));
        }
        if p.starts_with('~') || p.contains('$') {
            return Err(self.hit(format!("path {p}: `~` or `$` is not expanded by the tool")));
        }
        if pattern && p.contains(['*', '?', '[']) {
            return Err(self.hit(format!("pattern {p} is a glob")));
        }
        if pattern && !p.starts_with('/') {
            let Some(wt) = self.ctx.worktree.to_str() else {
                return Err(self.hit("worktree is not UTF-8"));
            };
            let Some(physical) = self.worktree.clone() else {
                return Err(self.hit("worktree cannot be resolved"));
            };
            let logical = lexfold(&[], wt);
            self.cwds = vec![Cwd { logical, physical }];
        } else {
            self.cwds = match &self.session {
                Some(s) => vec![s.clone()],
                None => vec![self.start_cwd(None)?],
            };
        }
        self.path(p, access, true, "tool")?;
        self.tool_done.push(key);
        Ok(())
    }

    // -----------------------------------------------------------------------------------------
    // Shell

    /// Analyses one command text run from `start`.
    fn command(&mut self, text: &str, start: &Cwd) -> Result<(), Hit> {
        self.cwds = vec![start.clone()];
        self.fail_cwds.clear();
        self.vars.clear();
        self.tainted.clear();
        self.wrote.clear();
        self.globbed.clear();
        self.ran_git.clear();
        let script =
            parse::parse(text).map_err(|u| self.hit(format!("{} at byte {}", u.what, u.at)))?;
        for pl in &script.pipelines {
            if pl.sep != Sep::And {
                // After `;`/newline or `||`, a failed `cd` of the chain before may be in effect.
                for c in std::mem::take(&mut self.fail_cwds) {
                    if !self.cwds.contains(&c) {
                        self.cwds.push(c);
                    }
                }
            }
            let in_pipeline = pl.cmds.len() > 1;
            let conditional = pl.sep != Sep::Seq;
            self.after_or = pl.sep == Sep::Or;
            for cmd in &pl.cmds {
                self.covered.push(text[cmd.at..cmd.end].to_string());
                self.simple_ix += 1;
                self.simple(cmd, in_pipeline, conditional)?;
            }
        }
        // Another simple command's write (before, or beside in a pipeline) is not in the
        // file system the check saw.
        let other = |a: &[usize], b: &[usize]| a.iter().any(|x| b.iter().any(|y| x != y));
        if other(&self.globbed, &self.wrote) {
            return Err(self.hit("glob in a command that also writes files"));
        }
        if other(&self.ran_git, &self.wrote) {
            return Err(self.hit("git in a command that also writes files"));
        }
        Ok(())
    }

    fn expand(&self, w: &Word) -> Result<String, Hit> {
        let mut s = String::new();
        for p in &w.parts {
            match p {
                Part::Lit(l) => s.push_str(l),
                Part::Glob(c) => {
                    return Err(self.hit(format!(
                        "glob `{c}` where it is not modeled at byte {}",
                        w.at
                    )))
                }
                Part::Home => {
                    if self.home_str.is_empty() {
                        return Err(self.hit("home directory unknown"));
                    }
                    s.push_str(&self.home_str)
                }
                Part::Var { name, quoted } => {
                    let v = if name == "HOME" {
                        if self.home_str.is_empty() {
                            return Err(self.hit("home directory unknown"));
                        }
                        self.home_str.clone()
                    } else if let Some(v) = self.vars.get(name) {
                        v.clone()
                    } else {
                        return Err(self.hit(format!("unknown variable ${name} at byte {}", w.at)));
                    };
                    if !quoted && (v.is_empty() || v.contains([' ', '\t', '\n', '*', '?', '['])) {
                        return Err(self.hit(format!(
                            "unquoted ${name} would be split or globbed at byte {}",
                            w.at
                        )));
                    }
                    s.push_str(&v);
                }
            }
        }
        Ok(s)
    }

    fn simple(&mut self, cmd: &Simple, in_pipeline: bool, conditional: bool) -> Result<(), Hit> {
        if cmd.words.is_empty() {
            for (name, value) in &cmd.assigns {
                if !name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
                {
                    return Err(self.hit(format!(
                        "assignment to {name} (only lower-case shell variables are modeled)"
                    )));
                }
                if in_pipeline || conditional {
                    return Err(self.hit(format!(
                        "assignment to {name} in a pipeline or after && / ||"
                    )));
                }
                let v = self.expand(value)?;
                self.vars.insert(name.clone(), v);
            }
            return self.redirs(cmd);
        }
        if let Some((name, _)) = cmd.assigns.first() {
            return Err(self.hit(format!("environment assignment {name}=… for a program")));
        }
        let prog_name = self.expand(&cmd.words[0])?;
        let mut argv: Vec<String> = vec![prog_name.clone()];
        let mut first_glob: Option<usize> = None;
        for w in &cmd.words[1..] {
            if w.parts.iter().any(|p| matches!(p, Part::Glob(_))) {
                first_glob.get_or_insert(argv.len());
                self.globbed.push(self.simple_ix);
                argv.extend(self.glob(w)?);
            } else {
                argv.push(self.expand(w)?);
            }
        }
        let prog_name = prog_name.as_str();
        if prog_name.contains('/') {
            return Err(self.hit(format!("program given as a path \"{prog_name}\"")));
        }
        let Some(prog) = programs::program(prog_name) else {
            return Err(self.hit(format!(
                "unmodeled program \"{}\"",
                prog_name.chars().take(60).collect::<String>()
            )));
        };
        if !prog.builtin {
            if let Some(why) = self.path_env_verdict() {
                return Err(self.hit(why));
            }
        }
        self.redirs(cmd)?;
        let args = &argv[1..];
        let name = prog.name;
        if let Some(g) = first_glob {
            // The order of matches (locale collation) must not decide a destination or a
            // pattern: for grep/rg the pattern must come before the first glob.
            let fixed = match prog.kind {
                Kind::Grep | Kind::Rg => programs::parse_args(&argv[1..g], prog.opts, false)
                    .is_ok_and(|a| {
                        !a.operands.is_empty()
                            || a.values
                                .iter()
                                .any(|(v, _)| matches!(v, Val::Pattern | Val::PatternFile))
                    }),
                Kind::Cp | Kind::Mv | Kind::Cd | Kind::Date | Kind::Printf => false,
                _ => true,
            };
            if !fixed {
                return Err(self.hit(format!("glob in the arguments of {name}")));
            }
        }
        let parse = |opts, numeric| {
            programs::parse_args(args, opts, numeric)
                .map_err(|o| format!("option {o} of {name} is not modeled"))
        };
        match prog.kind {
            Kind::Echo => Ok(()),
            Kind::Text if prog.opts.is_empty() => Ok(()),
            Kind::Text => {
                parse(prog.opts, prog.numeric_opt).map_err(|e| self.hit(e))?;
                Ok(())
            }
            Kind::Printf => {
                if args
                    .first()
                    .is_some_and(|a| a.starts_with('-') && a != "--")
                {
                    return Err(self.hit("printf with an option"));
                }
                Ok(())
            }
            Kind::Date => {
                let a = parse(prog.opts, false).map_err(|e| self.hit(e))?;
                if a.operands.iter().any(|o| !o.starts_with('+')) {
                    return Err(self.hit("date with an operand that sets the clock"));
                }
                Ok(())
            }
            Kind::List | Kind::Read | Kind::ReadOne => {
                let a = parse(prog.opts, prog.numeric_opt).map_err(|e| self.hit(e))?;
                self.values(&a)?;
                if prog.kind == Kind::ReadOne && a.operands.len() > 1 {
                    return Err(self.hit(format!("{name} with an output operand")));
                }
                let access = if prog.kind == Kind::List {
                    Access::List
                } else if matches!(name, "diff" | "cmp") {
                    // `diff DIR1 DIR2` reads the files in both directories.
                    Access::ReadTree
                } else {
                    Access::Read
                };
                for o in &a.operands {
                    if o != "-" {
                        self.path(o, access, true, name)?;
                    }
                }
                Ok(())
            }
            Kind::Grep | Kind::Rg => {
                let a = parse(prog.opts, false).map_err(|e| self.hit(e))?;
                self.values(&a)?;
                let given = a
                    .values
                    .iter()
                    .any(|(v, _)| matches!(v, Val::Pattern | Val::PatternFile));
                let mut files: Vec<&String> = a.operands.iter().collect();
                if !given && !files.is_empty() {
                    files.remove(0);
                }
                let recursive = a.recursive || prog.kind == Kind::Rg;
                let dot = ".".to_string();
                if recursive && files.is_empty() {
                    files.push(&dot);
                }
                let access = if recursive {
                    Access::ReadTree
                } else {
                    Access::Read
                };
                for f in files {
                    if f != "-" {
                        self.path(f, access, true, name)?;
                    }
                }
                Ok(())
            }
            Kind::Find => self.find(args),
            Kind::SedPrint => {
                let a = parse(prog.opts, false).map_err(|e| self.hit(e))?;
                if !args
                    .iter()
                    .any(|x| x == "-n" || x == "--quiet" || x == "--silent")
                {
                    return Err(self.hit("sed without -n"));
                }
                let Some((script, files)) = a.operands.split_first() else {
                    return Err(self.hit("sed without a script"));
                };
                if !sed_print_script(script) {
                    return Err(self.hit(format!("sed script {script:?} is not modeled")));
                }
                for f in files {
                    if f != "-" {
                        self.path(f, Access::Read, true, name)?;
                    }
                }
                Ok(())
            }
            Kind::Mkdir | Kind::Touch => {
                let a = parse(prog.opts, false).map_err(|e| self.hit(e))?;
                if a.operands.is_empty() {
                    return Err(self.hit(format!("{name} without an operand")));
                }
                for o in &a.operands {
                    self.path(o, Access::Write, true, name)?;
                }
                Ok(())
            }
            Kind::Rm => {
                if in_pipeline {
                    return Err(self.hit("rm in a pipeline"));
                }
                let a = parse(prog.opts, false).map_err(|e| self.hit(e))?;
                for o in &a.operands {
                    let access = if a.recursive {
                        Access::WriteTree
                    } else {
                        Access::Write
                    };
                    // `rm` removes a link, not its target; a removed path is strictly inside.
                    let rs = self.path(o, access, false, name)?;
                    for (comps, _) in &rs {
                        if !self
                            .write_roots
                            .iter()
                            .any(|r| starts_with(comps, r) && comps.len() > r.len())
                        {
                            return Err(self.hit(format!(
                                "rm {}: removes a project root",
                                self.display(comps)
                            )));
                        }
                    }
                }
                Ok(())
            }
            Kind::Cp | Kind::Mv => {
                if in_pipeline {
                    return Err(self.hit(format!("{name} in a pipeline")));
                }
                let a = parse(prog.opts, false).map_err(|e| self.hit(e))?;
                self.copy_move(name, prog.kind == Kind::Mv, &a)
            }
            Kind::Cd => self.cd(args, in_pipeline),
            Kind::Git => self.git(args),
        }
    }

    /// Pathname expansion of one argument word, as bash does it with its default options: `*`
    /// and `?` in the last component only, hidden names never matched (a pattern starting
    /// with `.` is left), no match → the word itself. Matches that start with `-` are left
    /// (their order would decide option values).
    fn glob(&mut self, w: &Word) -> Result<Vec<String>, Hit> {
        #[derive(Clone, Copy, PartialEq)]
        enum Pc {
            Lit(char),
            Star,
            One,
        }
        let mut pat: Vec<Pc> = Vec::new();
        for p in &w.parts {
            match p {
                Part::Glob('*') => pat.push(Pc::Star),
                Part::Glob(_) => pat.push(Pc::One),
                _ => {
                    let one = Word {
                        parts: vec![p.clone()],
                        at: w.at,
                    };
                    pat.extend(self.expand(&one)?.chars().map(Pc::Lit));
                }
            }
        }
        let text: String = pat
            .iter()
            .map(|c| match c {
                Pc::Lit(c) => *c,
                Pc::Star => '*',
                Pc::One => '?',
            })
            .collect();
        let slash = pat.iter().rposition(|c| *c == Pc::Lit('/'));
        let (dir_pat, last) = match slash {
            Some(k) => (&pat[..=k], &pat[k + 1..]),
            None => (&pat[..0], &pat[..]),
        };
        if dir_pat.iter().any(|c| !matches!(c, Pc::Lit(_))) || last.is_empty() {
            return Err(self.hit(format!("glob in a directory part: {text}")));
        }
        if last.first() == Some(&Pc::Lit('.')) {
            return Err(self.hit(format!("glob over hidden names: {text}")));
        }
        let dir: String = dir_pat
            .iter()
            .map(|c| if let Pc::Lit(c) = c { *c } else { '?' })
            .collect();
        if !dir.starts_with('/') && self.cwds.len() != 1 {
            return Err(self.hit(format!(
                "glob {text} with several possible working directories"
            )));
        }
        let read_at = if dir.starts_with('/') {
            dir.clone()
        } else {
            let mut b = join(&self.cwds[0].physical);
            b.push('/');
            b.push_str(&dir);
            b
        };
        fn matches(p: &[Pc], n: &[char]) -> bool {
            match (p.first(), n.first()) {
                (None, None) => true,
                (Some(Pc::Star), _) => {
                    matches(&p[1..], n) || (!n.is_empty() && matches(p, &n[1..]))
                }
                (Some(Pc::One), Some(_)) => matches(&p[1..], &n[1..]),
                (Some(Pc::Lit(a)), Some(b)) if a == b => matches(&p[1..], &n[1..]),
                _ => false,
            }
        }
        let mut out = Vec::new();
        if let Some(entries) = self.fs.read_dir(Path::new(&read_at)) {
            for (name, _) in entries {
                let Some(name) = name.to_str() else {
                    return Err(self.hit(format!("glob {text}: non-UTF-8 name")));
                };
                let chars: Vec<char> = name.chars().collect();
                if name.starts_with('.') || !matches(last, &chars) {
                    continue;
                }
                if out.len() >= 1000 {
                    return Err(self.hit(format!("glob {text}: more than 1000 matches")));
                }
                out.push(format!("{dir}{name}"));
            }
        }
        if out.is_empty() {
            out.push(text);
        }
        if out.iter().any(|m| m.starts_with('-')) {
            return Err(self.hit("glob match starting with `-`"));
        }
        out.sort();
        Ok(out)
    }

    /// Checks option values that are paths.
    fn values(&mut self, a: &programs::Args) -> Result<(), Hit> {
        for (val, v) in &a.values {
            if *val == Val::PatternFile {
                self.path(v, Access::Read, true, "option value")?;
            }
        }
        Ok(())
    }

    fn redirs(&mut self, cmd: &Simple) -> Result<(), Hit> {
        for r in &cmd.redirs {
            if let Redir::File { op, target } = r {
                let t = self.expand(target)?;
                // bash itself duplicates these descriptors; no file is opened.
                if matches!(t.as_str(), "/dev/stdout" | "/dev/stderr") && *op != RedirOp::In {
                    continue;
                }
                match op {
                    RedirOp::In => {
                        self.path(&t, Access::Read, true, "redirection")?;
                    }
                    RedirOp::Out | RedirOp::Append => {
                        self.path(&t, Access::Write, true, "redirection")?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Whether `PATH` lets a planted file stand for a modeled program.
    fn path_env_verdict(&mut self) -> Option<String> {
        if let Some(v) = self.ctx.path_verdict.get().filter(|_| self.cache) {
            return v.clone();
        }
        let mut verdict = None;
        if let Some(path) = self.ctx.path_env.clone() {
            for entry in path.split(':') {
                if !entry.starts_with('/') {
                    verdict = Some(format!("PATH has a relative entry \"{entry}\""));
                    break;
                }
                let lexical = lexfold(&[], entry);
                let phys = self.resolve(&[], entry, true).map(|r| r.0).ok();
                let writable = |c: &Vec<String>| self.write_roots.iter().any(|r| starts_with(c, r));
                if writable(&lexical) || phys.as_ref().is_some_and(writable) {
                    verdict = Some(format!("PATH entry {entry} is inside the project"));
                    break;
                }
            }
        }
        if self.cache {
            let _ = self.ctx.path_verdict.set(verdict.clone());
        }
        verdict
    }

    fn find(&mut self, args: &[String]) -> Result<(), Hit> {
        let mut i = 0;
        while i < args.len() && matches!(args[i].as_str(), "-H" | "-P") {
            i += 1;
        }
        let mut starts = Vec::new();
        while i < args.len() && !args[i].starts_with('-') && args[i] != "!" && args[i] != "(" {
            starts.push(args[i].clone());
            i += 1;
        }
        while i < args.len() {
            let a = args[i].as_str();
            i += 1;
            if programs::FIND_FLAGS.contains(&a) {
                continue;
            }
            if programs::FIND_TEXT.contains(&a) || programs::FIND_PATH.contains(&a) {
                let Some(v) = args.get(i) else {
                    return Err(self.hit(format!("find {a} without a value")));
                };
                i += 1;
                if programs::FIND_PATH.contains(&a) {
                    let v = v.clone();
                    self.path(&v, Access::List, true, "find")?;
                }
                continue;
            }
            return Err(self.hit(format!("find predicate {a} is not modeled")));
        }
        if starts.is_empty() {
            starts.push(".".into());
        }
        for s in &starts {
            self.path(s, Access::List, true, "find")?;
        }
        Ok(())
    }

    fn copy_move(&mut self, name: &str, mv: bool, a: &programs::Args) -> Result<(), Hit> {
        let target_dir = a
            .values
            .iter()
            .find(|(v, _)| *v == Val::TargetDir)
            .map(|(_, d)| d.clone());
        let no_target_dir = false;
        let mut sources: Vec<String> = a.operands.clone();
        let dest = match &target_dir {
            Some(d) => d.clone(),
            None => {
                if sources.len() < 2 {
                    return Err(self.hit(format!("{name} needs a source and a destination")));
                }
                sources.pop().unwrap_or_default()
            }
        };
        if sources.is_empty() {
            return Err(self.hit(format!("{name} without a source")));
        }
        for s in &sources {
            if mv {
                let rs = self.path(s, Access::Write, false, name)?;
                for (comps, node) in rs {
                    if node == Node::Symlink {
                        return Err(self.hit(format!("mv of a symlink {}", self.display(&comps))));
                    }
                    if !self
                        .write_roots
                        .iter()
                        .any(|r| starts_with(&comps, r) && comps.len() > r.len())
                    {
                        return Err(
                            self.hit(format!("mv {}: moves a project root", self.display(&comps)))
                        );
                    }
                    if node == Node::Dir {
                        self.walk(&comps, true, name)?;
                    }
                }
            } else {
                self.path(s, Access::Read, true, name)?;
            }
        }
        let dests = self.path(&dest, Access::Write, true, name)?;
        let mut written = Vec::new();
        for (comps, node) in dests {
            let into_dir = target_dir.is_some() || (node == Node::Dir && !no_target_dir);
            if into_dir {
                for s in &sources {
                    let base = s.trim_end_matches('/').rsplit('/').next().unwrap_or("");
                    if base.is_empty() || base == "." || base == ".." {
                        return Err(self.hit(format!("{name} source {s} has no name")));
                    }
                    let mut d = comps.clone();
                    d.push(base.to_string());
                    self.judge(&d, Node::Missing, Access::Write, name, false)?;
                    // The name inside the directory may itself be a symlink: resolve it.
                    let (phys, _) = self
                        .resolve(&comps, base, true)
                        .map_err(|e| self.hit(format!("{name}: {e}")))?;
                    self.judge(&phys, Node::Missing, Access::Write, name, false)?;
                    written.push(d);
                    written.push(phys);
                }
            } else {
                if sources.len() > 1 {
                    return Err(self.hit(format!("{name} of several sources to a non-directory")));
                }
                written.push(comps);
            }
        }
        self.tainted.extend(written);
        Ok(())
    }

    fn cd(&mut self, args: &[String], in_pipeline: bool) -> Result<(), Hit> {
        if in_pipeline {
            return Err(self.hit("cd in a pipeline"));
        }
        let target = match args {
            [] => self.home_str.clone(),
            [t] => t.clone(),
            _ => return Err(self.hit("cd with several arguments")),
        };
        if target.is_empty() || target.starts_with(['-', '+']) {
            return Err(self.hit(format!("cd {target}")));
        }
        if self.ctx.cdpath.is_some()
            && !(target.starts_with('/')
                || target.starts_with("./")
                || target.starts_with("../")
                || target == "."
                || target == "..")
        {
            return Err(self.hit(format!("cd {target} with CDPATH set")));
        }
        let olds = self.cwds.clone();
        let mut news: Vec<Cwd> = Vec::new();
        for c in &olds {
            let logical = lexfold(&c.logical, &target);
            let candidates = [
                self.resolve(&[], &join(&logical), true),
                self.resolve(&c.physical, &target, true),
            ];
            for r in candidates {
                let (physical, _) = r.map_err(|e| self.hit(format!("cd {target}: {e}")))?;
                if self.tainted.iter().any(|t| starts_with(&physical, t)) {
                    return Err(self.hit(format!(
                        "cd {target}: created or replaced by cp/mv earlier in the command"
                    )));
                }
                let n = Cwd {
                    logical: logical.clone(),
                    physical,
                };
                if !news.contains(&n) {
                    news.push(n);
                }
            }
        }
        // After `||` the cd is skipped when the left side succeeded, and a following `&&`
        // runs in the old directory: it stays possible at once.
        if self.after_or {
            for o in &olds {
                if !news.contains(o) {
                    news.push(o.clone());
                }
            }
        }
        for o in olds {
            if !self.fail_cwds.contains(&o) {
                self.fail_cwds.push(o);
            }
        }
        if news.len() + self.fail_cwds.len() > MAX_CWDS {
            return Err(self.hit("too many possible working directories"));
        }
        self.cwds = news;
        Ok(())
    }

    fn git(&mut self, args: &[String]) -> Result<(), Hit> {
        self.ran_git.push(self.simple_ix);
        if let Some(why) = &self.git_unknown {
            return Err(self.hit(format!("git: {why}")));
        }
        let mut i = 0;
        while i < args.len() && matches!(args[i].as_str(), "--no-pager" | "-P") {
            i += 1;
        }
        let Some(sub) = args.get(i) else {
            return Err(self.hit("git without a subcommand"));
        };
        if sub.starts_with('-') {
            return Err(self.hit(format!("git global option {sub} is not modeled")));
        }
        let Some(g) = programs::git_sub(sub) else {
            return Err(self.hit(format!("git subcommand \"{sub}\" is not modeled")));
        };
        let a = programs::parse_args(&args[i + 1..], g.opts, g.name == "log")
            .map_err(|o| self.hit(format!("option {o} of git {sub} is not modeled")))?;
        for o in &a.operands {
            if o.contains(':') {
                return Err(self.hit(format!("git operand {o} (object path)")));
            }
        }
        match g.operands {
            None if !a.operands.is_empty() => {
                return Err(self.hit(format!("git {sub} with an operand")));
            }
            Some(Kind::List) | Some(Kind::Read) => {
                let access = if g.operands == Some(Kind::List) {
                    Access::List
                } else {
                    Access::Read
                };
                // `git diff A B` with a path outside the working tree is `git diff --no-index`,
                // which reads both sides recursively (red-team R1); other subcommands reject
                // such a path, so every path operand must lie inside the worktree.
                let wt = self.worktree.clone().unwrap_or_default();
                let wt_lexical = self.ctx_worktree_lexical();
                let inside = |p: &Vec<String>| starts_with(p, &wt) || starts_with(p, &wt_lexical);
                for o in &a.operands {
                    let lexical: Vec<Vec<String>> =
                        self.cwds.iter().map(|c| lexfold(&c.logical, o)).collect();
                    let phys = match lexical.iter().find(|p| !inside(p)) {
                        Some(p) => vec![(p.clone(), Node::Missing)],
                        None => self.path(o, access, true, "git")?,
                    };
                    if let Some((p, _)) = phys.iter().find(|(p, _)| !inside(p)) {
                        return Err(self.hit(format!(
                            "git {sub}: operand {o} is {}, outside the worktree (git reads it as --no-index)",
                            self.display(p)
                        )));
                    }
                }
            }
            _ => {}
        }
        // A diff or filter driver runs a program on contents git produces, and `.gitattributes`
        // (or any tracked file) decides what it is given (red-team R4).
        // `ls-files -m` refreshes the index like `status`: clean filters, fsmonitor.
        if matches!(
            g.name,
            "diff" | "log" | "show" | "blame" | "status" | "ls-files"
        ) {
            if let Some(d) = self.git_scan().drivers.first() {
                return Err(self.hit(format!(
                    "git {sub}: the git configuration runs a program on contents ({d})"
                )));
            }
        }
        self.git_repo_ok()
    }

    /// The worktree as given (lexical components).
    fn ctx_worktree_lexical(&self) -> Vec<String> {
        self.ctx
            .worktree
            .to_str()
            .map(|w| lexfold(&[], w))
            .unwrap_or_default()
    }

    /// git runs only where it finds the project's own repository: the working directory is
    /// inside the worktree, the worktree has `.git`, and no directory between them holds a
    /// `.git` or a `HEAD` (a planted repository, bare or not, whose config git would obey).
    fn git_repo_ok(&mut self) -> Result<(), Hit> {
        let Some(wt) = self.worktree.clone() else {
            return Err(self.hit("git: worktree unknown"));
        };
        if !self.write_roots.contains(&wt) {
            return Err(self.hit("git: the worktree is not a project directory"));
        }
        let mut dot_git = wt.clone();
        dot_git.push(".git".into());
        if !matches!(self.lstat(&join(&dot_git)), Node::Dir | Node::File) {
            return Err(self.hit("git: the worktree has no .git"));
        }
        if let Some(why) = self.git_scan().objection() {
            return Err(self.hit(format!(
                "git: configuration names a program in the project ({why})"
            )));
        }
        for c in self.cwds.clone() {
            if !starts_with(&c.physical, &wt) {
                return Err(self.hit("git: working directory outside the worktree"));
            }
            let mut d = c.physical.clone();
            while d.len() > wt.len() {
                for name in [".git", "HEAD"] {
                    let mut p = d.clone();
                    p.push(name.into());
                    if self.lstat(&join(&p)) != Node::Missing {
                        return Err(self.hit(format!(
                            "git: {} may be another repository",
                            self.display(&d)
                        )));
                    }
                }
                d.pop();
            }
        }
        Ok(())
    }
}

/// Whether the glob components `pat` (`**`: any number of components; `*`, `?` within one;
/// `[…]`, `{…}` widened to `*`) match the path components `path`.
fn glob_comps(pat: &[&str], path: &[&str]) -> bool {
    match pat.split_first() {
        None => path.is_empty(),
        Some((&"**", rest)) => (0..=path.len()).any(|i| glob_comps(rest, &path[i..])),
        Some((p, rest)) => {
            !path.is_empty()
                && glob_comp(widen(p).as_bytes(), path[0].as_bytes())
                && glob_comps(rest, &path[1..])
        }
    }
}

/// A glob component with each `[…]` or `{…}` group (and anything unterminated after `[`/`{`)
/// replaced by `*`: a wider match, never a narrower one.
fn widen(p: &str) -> String {
    let mut out = String::with_capacity(p.len());
    let mut close: Option<char> = None;
    for ch in p.chars() {
        match close {
            Some(c) if ch == c => close = None,
            Some(_) => {}
            None if ch == '[' || ch == '{' => {
                close = Some(if ch == '[' { ']' } else { '}' });
                out.push('*');
            }
            None => out.push(ch),
        }
    }
    out
}

/// `*` and `?` within one component (bytes; `?` may match part of a UTF-8 character, which
/// only widens the match).
fn glob_comp(p: &[u8], n: &[u8]) -> bool {
    match p.split_first() {
        None => n.is_empty(),
        Some((b'*', rest)) => (0..=n.len()).any(|i| glob_comp(rest, &n[i..])),
        Some((b'?', rest)) => !n.is_empty() && glob_comp(rest, &n[1..]),
        Some((c, rest)) => n.first() == Some(c) && glob_comp(rest, &n[1..]),
    }
}

fn norm(comps: &[String]) -> Vec<Comp<'_>> {
    comps.iter().map(|c| norm_comp(c)).collect()
}

/// `Np`, `N,Mp`, `N,$p`, `$p` with decimal N and M: a sed script that only prints lines.
fn sed_print_script(s: &str) -> bool {
    let Some(addr) = s.strip_suffix('p') else {
        return false;
    };
    let num = |x: &str| !x.is_empty() && x.len() <= 9 && x.bytes().all(|b| b.is_ascii_digit());
    match addr.split_once(',') {
        None => addr == "$" || num(addr),
        Some((a, b)) => num(a) && (b == "$" || num(b)),
    }
}

/// Paths named by an OpenCode/Codex patch (`*** Add File: p`, `*** Update File: p`,
/// `*** Delete File: p`, `*** Move to: p`; OpenCode takes the text after the colon, trimmed).
/// Any other line starting with `***` (e.g. `*** Move To:`) is an error: a parser more lenient
/// than this one may read a path in it.
fn patch_paths(text: &str) -> Result<Vec<&str>, String> {
    let mut out = Vec::new();
    for l in text.lines() {
        let l = l.trim();
        if !l.starts_with("***")
            || matches!(l, "*** Begin Patch" | "*** End Patch" | "*** End of File")
        {
            continue;
        }
        let path = [
            "*** Add File:",
            "*** Update File:",
            "*** Delete File:",
            "*** Move to:",
        ]
        .iter()
        .find_map(|p| l.strip_prefix(p))
        .map(str::trim)
        .filter(|p| !p.is_empty());
        match path {
            Some(p) => out.push(p),
            None => {
                return Err(format!(
                    "patch: header line {:?} is not parsed exactly",
                    l.chars().take(80).collect::<String>()
                ))
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
