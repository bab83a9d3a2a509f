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
//! applying `..` after resolution (a stretch of 3+ components with no symlink is looked at in
//! one `openat2(RESOLVE_NO_SYMLINKS)`, `plain.rs`, with the same answers; anything else is
//! looked at per component). A path through `/proc` or an unreadable directory is left,
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

mod commands;
mod gitconfig;
mod kernelfs;
mod names;
pub(crate) mod parse;
mod paths;
mod plain;
pub(crate) mod programs;
mod protect;
mod tools;

pub use self::tools::TOOL_ARG_KEYS;

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
    roots: std::sync::OnceLock<std::sync::Arc<Roots>>,
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
    /// What `lstat` says of the absolute path `p` when `lstat` of every proper prefix of it
    /// says [`Node::Dir`] (no symlink on the way), in one look; `None` when that is not so or
    /// not known (the resolver then asks [`FsProbe::lstat`] component by component, as it
    /// does for any probe that does not override this). Never a different answer than the
    /// per-component walk would give: it only saves system calls. The default knows nothing.
    fn lstat_plain(&self, _p: &Path) -> Option<Node> {
        None
    }
    /// Whether the directory `p` lies on a kernel interface file system (procfs, sysfs,
    /// debugfs, ...: `kernelfs.rs`) mounted anywhere, whose files are processes' and the
    /// kernel's state, not data; `true` when it cannot be told. The default knows of none.
    fn kernel_fs(&self, _p: &Path) -> bool {
        false
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
    /// One `openat2(RESOLVE_NO_SYMLINKS)` and `fstat` (Linux; `plain.rs`).
    fn lstat_plain(&self, p: &Path) -> Option<Node> {
        plain::plain_lstat(p)
    }
    /// `statfs(2)` and the file system's magic number (`kernelfs.rs`).
    fn kernel_fs(&self, p: &Path) -> bool {
        kernelfs::on_kernel_fs(p)
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
    /// The context's physical roots (writes are confined to `write_roots`; the worktree,
    /// physical; protected roots; the hook directories and programs git's configuration
    /// names; the session directory and `$HOME`, resolved once): shared with the context's
    /// cache, not copied per check.
    roots: std::sync::Arc<Roots>,
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
    /// Paths [`FsProbe::lstat_plain`] answered within this one check, with its answer: each
    /// proper prefix of one is a directory (never across checks either).
    plain_memo: RefCell<Vec<(String, Node)>>,
    link_memo: RefCell<HashMap<String, Option<PathBuf>>>,
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
            roots: std::sync::Arc::new(Roots::default()),
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
            plain_memo: RefCell::new(Vec::new()),
            link_memo: RefCell::new(HashMap::new()),
            git_named: Vec::new(),
            git_unknown: None,
            tool_done: Vec::new(),
            cache,
        };
        if let Some(h) = ctx.home.to_str() {
            c.home = lexfold(&[], h);
            c.home_str = join(&c.home);
        }
        c.roots = match ctx.roots.get() {
            Some(r) if cache => std::sync::Arc::clone(r),
            _ => {
                let r = std::sync::Arc::new(c.roots());
                if cache {
                    let _ = ctx.roots.set(std::sync::Arc::clone(&r));
                }
                r
            }
        };
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

    fn hit(&self, reason: impl std::fmt::Display) -> Hit {
        if self.origin.is_empty() {
            unproven(reason.to_string())
        } else {
            unproven(format!("{}: {reason}", self.origin))
        }
    }
}

fn norm(comps: &[String]) -> Vec<Comp<'_>> {
    comps.iter().map(|c| norm_comp(c)).collect()
}

#[cfg(test)]
mod tests;
