//! Shared pieces of the guardrail evidence tests (`tests/guardrail_corpus.rs`,
//! `tests/guardrail_exec.rs`): a throwaway HOME and project with every protected category
//! planted (plus symlinks that lead into them), the request shapes OpenCode 1.18 raises for
//! bash, edit/write, patch and read tool calls, and an independent list of the protected places
//! in that sandbox with a snapshot of them (content, mode, owner, symlink target, entries).
//!
//! Independence: nothing here asks the engine what is protected. The list below is written from
//! the seed's categories (module doc of `src/policy/guardrail/`) and issue 10.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

use c2c_bridge::policy::guardrail::{PathContext, PermissionRequest};
use serde_json::{json, Value};

/// The repository's shared deterministic generator (xorshift64*), the same file unit tests use.
#[path = "../../src/testutil.rs"]
mod testutil;
#[allow(unused_imports)]
pub(crate) use testutil::xorshift;

/// Files planted in the throwaway HOME (path relative to HOME, content). Directories are made
/// as needed. Every one of them is protected. Credentials hold a [`CANARY`] string, so a
/// command that reads one and prints or copies it is seen.
pub const HOME_FILES: &[(&str, &str)] = &[
    (".bashrc", "# bashrc\n"),
    (".bash_profile", "# bash_profile\n"),
    (".bash_logout", "# bash_logout\n"),
    (".profile", "# profile\n"),
    (".zshrc", "# zshrc\n"),
    (".zshenv", "# zshenv\n"),
    (".bashrc.d/10-path.sh", "PATH=$PATH\n"),
    (".ssh/authorized_keys", "ssh-ed25519 AAAA user@host\n"),
    (
        ".ssh/id_ed25519",
        "-----BEGIN OPENSSH PRIVATE KEY-----\nCANARY-CRED-ssh-key\n",
    ),
    (".ssh/id_ed25519.pub", "ssh-ed25519 AAAA user@host\n"),
    (".ssh/config", "Host *\n"),
    (".ssh/known_hosts", "host ssh-ed25519 AAAA\n"),
    (".gitconfig", "[user]\n\tname = u\n"),
    (
        ".git-credentials",
        "https://u:CANARY-CRED-git-credentials@example.invalid\n",
    ),
    (
        ".netrc",
        "machine example.invalid login u password CANARY-CRED-netrc\n",
    ),
    (
        ".npmrc",
        "//registry.invalid/:_authToken=CANARY-CRED-npmrc\n",
    ),
    (".pypirc", "[pypi]\npassword = CANARY-CRED-pypirc\n"),
    (".yarnrc.yml", "npmAuthToken: CANARY-CRED-yarnrc\n"),
    (
        ".aws/credentials",
        "[default]\naws_secret_access_key = CANARY-CRED-aws\n",
    ),
    (".kube/config", "apiVersion: v1\n"),
    (".docker/config.json", "{\"auths\":{}}\n"),
    (".gnupg/pubring.kbx", "gpg\n"),
    (
        ".cargo/credentials.toml",
        "[registry]\ntoken = \"CANARY-CRED-cargo\"\n",
    ),
    (".claude.json", "{}\n"),
    (".claude/settings.json", "{}\n"),
    (".config/opencode/opencode.json", "{}\n"),
    (".config/git/config", "[core]\n"),
    (".config/fish/config.fish", "# fish\n"),
    (
        ".config/gh/hosts.yml",
        "github.com:\n  oauth_token: CANARY-CRED-gh\n",
    ),
    (".config/pip/pip.conf", "[global]\n"),
    (".config/systemd/user/existing.service", "[Service]\n"),
    (".config/autostart/existing.desktop", "[Desktop Entry]\n"),
    (".local/share/systemd/user/existing.timer", "[Timer]\n"),
    (
        ".local/share/opencode/auth.json",
        "{\"token\":\"CANARY-CRED-opencode-auth\"}\n",
    ),
    (".c2c/registry.json", "{}\n"),
    (".c2c/approval-verdict/keep", "x\n"),
];

/// The marker in every planted credential's content.
pub const CANARY: &str = "CANARY-CRED-";

/// Protected names in HOME that do not exist in the sandbox but must not appear either.
pub const HOME_ABSENT: &[&str] = &[
    ".bash_login",
    ".zprofile",
    ".zlogin",
    ".kshrc",
    ".cshrc",
    ".envrc",
    ".pgpass",
    ".my.cnf",
    ".vault-token",
    ".config/opencode/config.json",
    ".config/opencode/opencode.jsonc",
    ".ssh/id_rsa",
    ".ssh/rc",
    ".local/share/systemd",
    ".config/systemd",
];

/// Ordinary (unprotected) project files.
pub const PROJECT_FILES: &[(&str, &str)] = &[
    ("README.md", "# demo\nhello world\n"),
    ("Cargo.toml", "[package]\nname = \"demo\"\n"),
    (
        "package.json",
        "{\"name\":\"demo\",\"scripts\":{\"test\":\"true\"}}\n",
    ),
    ("src/main.rs", "fn main() { println!(\"hi\"); }\n"),
    ("src/lib.rs", "pub fn f() -> u32 { 1 }\n"),
    ("src/util/mod.rs", "// util\n"),
    ("docs/guide.md", "guide\nTODO: more\n"),
    ("data.txt", "b\na\nc\na\n"),
    ("input.txt", "hello\n"),
    (
        "hex.txt",
        "00000000: 6563 686f 0a                             echo.\n",
    ),
    ("tests/basic.rs", "#[test] fn t() {}\n"),
    ("scripts/build.sh", "#!/bin/sh\necho build\n"),
    ("tmp/.keep", ""),
    ("app/main.py", "print(1)\n"),
    ("app/lib/util.py", "x = 1\n"),
];

/// Protected project files (relative to the project).
pub const PROJECT_PROTECTED_FILES: &[(&str, &str)] = &[
    ("AGENTS.md", "# agents\n"),
    ("CLAUDE.md", "# claude\n"),
    ("opencode.json", "{\"permission\":{}}\n"),
    (".opencode/agent/build.md", "agent\n"),
    (".claude/settings.json", "{}\n"),
    (".env", "SECRET=CANARY-CRED-dotenv\n"),
    (".env.local", "SECRET=CANARY-CRED-dotenv-local\n"),
    (".envrc", "export X=1\n"),
    (".husky/pre-commit", "#!/bin/sh\n"),
    (".git/config", "[core]\n\trepositoryformatversion = 0\n"),
    (".git/hooks/pre-commit.sample", "#!/bin/sh\n"),
    (".git/HEAD", "ref: refs/heads/main\n"),
    (".git/description", "demo\n"),
    (".git/info/exclude", "# exclude\n"),
    (".git/objects/info/.keep", ""),
    (".git/refs/heads/.keep", ""),
    // Nested protected names (monorepos): only globs and recursion reach them.
    ("app/.env", "SECRET=CANARY-CRED-app-dotenv\n"),
    ("app/lib/AGENTS.md", "# nested agents\n"),
];

/// Protected places in the project that do not exist but must not appear.
pub const PROJECT_ABSENT: &[&str] = &[
    "opencode.jsonc",
    ".npmrc",
    ".env.production",
    "CLAUDE.local.md",
];

/// Symlinks planted in the project: (link relative to the project, target). `@H@` is HOME,
/// `@P@` the project. Corpus entries name the ones they rely on in `setup`.
pub const PROJECT_LINKS: &[(&str, &str)] = &[
    // `L/../hooks` is `.git/hooks` for the kernel, `hooks` for a lexical fold.
    ("lnk_obj", ".git/objects"),
    ("lnk_git", ".git"),
    ("lnk_hooks", ".git/hooks"),
    ("lnk_home", "@H@"),
    ("lnk_ssh", "@H@/.ssh"),
    ("lnk_config", "@H@/.config"),
    // A file link to a protected file, with an innocent name.
    ("notes_link.txt", "@H@/.bashrc"),
    // A dangling link whose target is a protected name that does not exist yet.
    ("lnk_dangle", ".git/hooks/post-checkout"),
    // A two-hop chain ending in a dangling protected name.
    ("lnk_chain1", "lnk_chain2"),
    ("lnk_chain2", ".git/hooks/pre-push"),
    // A relative link inside a subdirectory climbing out of it.
    ("docs/up", ".."),
    // A link into the systemd user directory (missing-name family).
    ("lnk_units", "@H@/.config/systemd/user"),
    // Benign: a link to an ordinary project directory.
    ("src_link", "src"),
];

/// A throwaway HOME and project under one temporary root.
pub struct Sandbox {
    _dir: tempfile::TempDir,
    /// The sandbox root (canonical).
    pub root: PathBuf,
    /// The throwaway `$HOME`.
    pub home: PathBuf,
    /// The project (session directory and worktree).
    pub project: PathBuf,
}

impl Sandbox {
    /// A fresh sandbox with every file and link above, in the system temp directory.
    pub fn new() -> Sandbox {
        Sandbox::new_in(&std::env::temp_dir())
    }

    /// A fresh sandbox below `parent`.
    pub fn new_in(parent: &Path) -> Sandbox {
        let dir = tempfile::tempdir_in(parent).unwrap();
        let root = fs::canonicalize(dir.path()).unwrap();
        let home = root.join("home");
        let project = root.join("project");
        let sb = Sandbox {
            _dir: dir,
            root,
            home,
            project,
        };
        sb.populate();
        sb
    }

    fn populate(&self) {
        for (rel, content) in HOME_FILES {
            write_file(&self.home.join(rel), content);
        }
        for (rel, content) in PROJECT_FILES.iter().chain(PROJECT_PROTECTED_FILES) {
            write_file(&self.project.join(rel), content);
        }
        fs::set_permissions(self.home.join(".ssh"), fs::Permissions::from_mode(0o700)).unwrap();
        fs::set_permissions(
            self.home.join(".ssh/id_ed25519"),
            fs::Permissions::from_mode(0o600),
        )
        .unwrap();
        fs::set_permissions(
            self.project.join("scripts/build.sh"),
            fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        for (link, target) in PROJECT_LINKS {
            self.link(link, target);
        }
    }

    /// Plants the entry's extra links and files, and its `.git/config`; returns what `unplant`
    /// needs to undo it.
    pub fn plant(&self, e: &Entry) -> Vec<u8> {
        for (link, target) in &e.links {
            self.link(link, target);
        }
        for (rel, content) in &e.files {
            write_file(&self.project.join(rel), content);
        }
        let git_config = self.project.join(".git/config");
        let saved = fs::read(&git_config).unwrap();
        if let Some(c) = &e.git_config {
            fs::write(&git_config, c).unwrap();
        }
        saved
    }

    /// Undoes [`Sandbox::plant`]: links and files removed (with directories made for them,
    /// when empty), `.git/config` restored.
    pub fn unplant(&self, e: &Entry, saved_git_config: Vec<u8>) {
        fs::write(self.project.join(".git/config"), saved_git_config).unwrap();
        for rel in e.links.keys().chain(e.files.keys()) {
            let p = self.project.join(rel);
            fs::remove_file(&p).unwrap();
            let mut dir = p.parent();
            while let Some(d) = dir.filter(|d| *d != self.project) {
                if fs::remove_dir(d).is_err() {
                    break;
                }
                dir = d.parent();
            }
        }
    }

    /// Plants `link` (relative to the project) pointing at `target` (`@H@`/`@P@` substituted).
    pub fn link(&self, link: &str, target: &str) {
        let l = self.project.join(link);
        if let Some(parent) = l.parent() {
            fs::create_dir_all(parent).unwrap();
        }
        std::os::unix::fs::symlink(self.subst(target), &l).unwrap();
    }

    /// `@H@` → HOME, `@P@` → project, `@R@` → root.
    pub fn subst(&self, s: &str) -> String {
        s.replace("@H@", &self.home.to_string_lossy())
            .replace("@P@", &self.project.to_string_lossy())
            .replace("@R@", &self.root.to_string_lossy())
    }

    /// The context every request is checked in: cwd = worktree = project.
    pub fn ctx(&self) -> PathContext {
        PathContext::new(&self.project, &self.project, &self.home)
    }

    /// Every protected place of this sandbox, from the lists above (independent of the
    /// engine), with whether it is recorded recursively. HOME, `.config`, `.local` and `.git`
    /// themselves are recorded without their entries (a new `~/notes.txt` or `.git/index` is
    /// no harm); every protected name in them is recorded in full (created, changed or removed
    /// counts).
    pub fn protected_paths(&self) -> Vec<(PathBuf, bool)> {
        let mut v = vec![
            (self.root.clone(), false),
            (self.home.clone(), false),
            (self.project.clone(), false),
            (self.project.join(".git"), false),
            (self.project.join(".git/config"), true),
            (self.project.join(".git/hooks"), true),
            (self.project.join(".git/info"), true),
            (self.home.join(".config"), false),
            (self.home.join(".local"), false),
            (self.home.join(".local/share"), false),
            (self.home.join(".local/state/c2c"), true),
        ];
        // HOME: every planted or listed name is protected (as a whole, recursively), except
        // that `.config` and `.local` are containers: their protected children are listed.
        for p in HOME_FILES
            .iter()
            .map(|(p, _)| *p)
            .chain(HOME_ABSENT.iter().copied())
        {
            let comps: Vec<&str> = p.split('/').collect();
            let keep = match comps[0] {
                ".config" => 2,
                ".local" => 3,
                _ => 1,
            }
            .min(comps.len());
            v.push((self.home.join(comps[..keep].join("/")), true));
        }
        for extra in [".config/environment.d", ".pip", "Library/LaunchAgents"] {
            v.push((self.home.join(extra), true));
        }
        for (p, _) in PROJECT_PROTECTED_FILES {
            if p.starts_with(".git/") {
                continue;
            }
            let top = p.split('/').next().unwrap();
            if top.starts_with('.') || !p.contains('/') {
                // A protected name at the top (a file or a whole dot-directory).
                v.push((self.project.join(top), true));
            } else {
                // A protected name nested in an ordinary directory: the file itself.
                v.push((self.project.join(p), true));
            }
        }
        for p in PROJECT_ABSENT {
            v.push((self.project.join(p), true));
        }
        v.sort();
        v.dedup();
        v
    }

    /// Files outside the planted credentials that hold a credential's [`CANARY`] (a copy or
    /// move of a secret into a readable place).
    pub fn canary_copies(&self) -> Vec<PathBuf> {
        let planted: Vec<PathBuf> = HOME_FILES
            .iter()
            .map(|(p, _)| self.home.join(p))
            .chain(
                PROJECT_PROTECTED_FILES
                    .iter()
                    .map(|(p, _)| self.project.join(p)),
            )
            .collect();
        manifest(&self.root)
            .into_iter()
            .filter_map(|(rel, item)| match item {
                Item::File(_, _, _, content)
                    if content
                        .windows(CANARY.len())
                        .any(|w| w == CANARY.as_bytes()) =>
                {
                    Some(self.root.join(rel))
                }
                _ => None,
            })
            .filter(|p| !planted.contains(p))
            .collect()
    }

    /// A snapshot of every protected place: lstat kind, mode, owner, content, link target,
    /// entries of directories where the list says recursive (else the directory's own kind,
    /// mode and owner only).
    pub fn snapshot(&self) -> BTreeMap<PathBuf, String> {
        let mut out = BTreeMap::new();
        for (p, rec) in self.protected_paths() {
            record(&p, rec, &mut out);
        }
        out
    }
}

/// One entry of a [`Manifest`]: what `lstat` and the content say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    /// A directory: mode, uid, gid.
    Dir(u32, u32, u32),
    /// A regular file: mode, uid, gid, content.
    File(u32, u32, u32, Vec<u8>),
    /// A symlink: target, uid, gid.
    Link(PathBuf, u32, u32),
}

/// Every entry below a directory (paths relative to it), in walk order (parents first).
pub type Manifest = BTreeMap<PathBuf, Item>;

/// The manifest of everything below `root` (symlinks not followed; special files skipped).
pub fn manifest(root: &Path) -> Manifest {
    fn walk(root: &Path, rel: &Path, out: &mut Manifest) {
        let p = root.join(rel);
        let Ok(m) = fs::symlink_metadata(&p) else {
            return;
        };
        let (mode, uid, gid) = (m.mode(), m.uid(), m.gid());
        if m.file_type().is_symlink() {
            out.insert(
                rel.to_owned(),
                Item::Link(fs::read_link(&p).unwrap_or_default(), uid, gid),
            );
        } else if m.is_dir() {
            out.insert(rel.to_owned(), Item::Dir(mode, uid, gid));
            if let Ok(rd) = fs::read_dir(&p) {
                for e in rd.flatten() {
                    walk(root, &rel.join(e.file_name()), out);
                }
            }
        } else if m.is_file() {
            out.insert(
                rel.to_owned(),
                Item::File(mode, uid, gid, fs::read(&p).unwrap_or_default()),
            );
        } else {
            // A fifo or socket a command made: recorded as an odd file so restore removes it.
            out.insert(rel.to_owned(), Item::File(u32::MAX, uid, gid, Vec::new()));
        }
    }
    let mut out = Manifest::new();
    if let Ok(rd) = fs::read_dir(root) {
        for e in rd.flatten() {
            walk(root, Path::new(&e.file_name()), &mut out);
        }
    }
    out
}

/// Brings the tree below `root` back to `want`, touching only what differs (much cheaper than
/// rebuilding on a disk file system). Returns how many entries it fixed.
pub fn restore(root: &Path, want: &Manifest) -> usize {
    let have = manifest(root);
    let mut fixed = 0;
    // Remove what should not be there or has the wrong kind/content (deepest first).
    for (rel, item) in have.iter().rev() {
        let p = root.join(rel);
        let keep = match (item, want.get(rel)) {
            (Item::Dir(..), Some(Item::Dir(..))) => true,
            (a, Some(b)) => a == b,
            (_, None) => false,
        };
        if !keep {
            if matches!(item, Item::Dir(..)) {
                make_writable(&p);
                let _ = fs::remove_dir_all(&p);
            } else {
                let _ = fs::remove_file(&p);
            }
            fixed += 1;
        }
    }
    // Create what is missing, fix directory modes and owners (parents first).
    for (rel, item) in want {
        let p = root.join(rel);
        let now = fs::symlink_metadata(&p).ok();
        match item {
            Item::Dir(mode, uid, gid) => {
                if now.is_none() {
                    fs::create_dir(&p).unwrap();
                    fixed += 1;
                }
                let m = fs::symlink_metadata(&p).unwrap();
                if m.mode() != *mode {
                    fs::set_permissions(&p, fs::Permissions::from_mode(*mode)).unwrap();
                }
                if (m.uid(), m.gid()) != (*uid, *gid) {
                    std::os::unix::fs::lchown(&p, Some(*uid), Some(*gid)).unwrap();
                }
            }
            Item::File(mode, uid, gid, content) if now.is_none() => {
                fs::write(&p, content).unwrap();
                fs::set_permissions(&p, fs::Permissions::from_mode(*mode)).unwrap();
                std::os::unix::fs::lchown(&p, Some(*uid), Some(*gid)).unwrap();
                fixed += 1;
            }
            Item::Link(target, uid, gid) if now.is_none() => {
                std::os::unix::fs::symlink(target, &p).unwrap();
                std::os::unix::fs::lchown(&p, Some(*uid), Some(*gid)).unwrap();
                fixed += 1;
            }
            _ => {}
        }
    }
    fixed
}

fn record(p: &Path, recursive: bool, out: &mut BTreeMap<PathBuf, String>) {
    let Ok(m) = fs::symlink_metadata(p) else {
        out.insert(p.to_owned(), "absent".into());
        return;
    };
    let head = format!("mode={:o} uid={} gid={}", m.mode(), m.uid(), m.gid());
    if m.file_type().is_symlink() {
        let t = fs::read_link(p)
            .map(|t| t.display().to_string())
            .unwrap_or_default();
        out.insert(p.to_owned(), format!("{head} symlink -> {t}"));
    } else if m.is_dir() && !recursive {
        out.insert(p.to_owned(), format!("{head} dir"));
    } else if m.is_dir() {
        let mut names: Vec<_> = match fs::read_dir(p) {
            Ok(rd) => rd.filter_map(|e| e.ok()).map(|e| e.file_name()).collect(),
            Err(e) => {
                out.insert(p.to_owned(), format!("{head} dir unreadable: {e}"));
                return;
            }
        };
        names.sort();
        let list: Vec<String> = names
            .iter()
            .map(|n| n.to_string_lossy().into_owned())
            .collect();
        out.insert(p.to_owned(), format!("{head} dir [{}]", list.join(", ")));
        for n in names {
            record(&p.join(n), true, out);
        }
    } else if m.is_file() {
        let content = fs::read(p).map(|b| String::from_utf8_lossy(&b).into_owned());
        let content = content.unwrap_or_else(|e| format!("<unreadable {e}>"));
        let short: String = content.chars().take(200).collect();
        out.insert(
            p.to_owned(),
            format!("{head} file len={} {:?}", m.len(), short),
        );
    } else {
        out.insert(p.to_owned(), format!("{head} special"));
    }
}

/// What differs between two snapshots, one line per path.
pub fn diff(before: &BTreeMap<PathBuf, String>, after: &BTreeMap<PathBuf, String>) -> Vec<String> {
    let mut out = Vec::new();
    for (p, b) in before {
        match after.get(p) {
            Some(a) if a == b => {}
            Some(a) => out.push(format!("{}: {b} => {a}", p.display())),
            None => out.push(format!("{}: {b} => gone", p.display())),
        }
    }
    for (p, a) in after {
        if !before.contains_key(p) {
            out.push(format!("{}: new {a}", p.display()));
        }
    }
    out
}

fn write_file(p: &Path, content: &str) {
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, content).unwrap();
}

fn make_writable(p: &Path) {
    // A command may have chmod-ed a directory to 000; root can delete anyway, but be explicit.
    if let Ok(m) = fs::symlink_metadata(p) {
        if m.is_dir() {
            let _ = fs::set_permissions(p, fs::Permissions::from_mode(0o755));
            if let Ok(rd) = fs::read_dir(p) {
                for e in rd.flatten() {
                    make_writable(&e.path());
                }
            }
        }
    }
}

/// Lexical normalisation as Node's `path.join`/`path.relative` do it (OpenCode builds
/// `metadata.filepath` and `patterns` with them): `.` dropped, `..` folded.
pub fn node_normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

/// The request OpenCode 1.18 raises for a bash tool call (`metadata.command`, the command as
/// its pattern, the raw arguments with an optional `workdir`).
pub fn bash_request(cmd: &str, workdir: Option<&str>) -> PermissionRequest {
    let mut args = json!({"command": cmd, "description": "run"});
    if let Some(w) = workdir {
        args["workdir"] = json!(w);
    }
    serde_json::from_value(json!({
        "permission": "bash",
        "command": cmd,
        "patterns": [cmd],
        "args": args,
    }))
    .unwrap()
}

impl Sandbox {
    /// The absolute path OpenCode's edit/write tools use for `raw`: absolute as given (not
    /// normalised), relative joined to the project and normalised (`path.join`). (`~/` is
    /// turned into HOME by the corpus loader before this.)
    pub fn tool_filepath(&self, raw: &str) -> String {
        if raw.starts_with('/') {
            raw.to_owned()
        } else if let Some(rest) = raw.strip_prefix("~/") {
            format!("{}/{rest}", self.home.display())
        } else {
            node_normalize(&self.project.join(raw))
                .display()
                .to_string()
        }
    }

    /// `path.relative(worktree, filepath)`: normalised, `..` where it leaves the worktree.
    pub fn tool_pattern(&self, filepath: &str) -> String {
        let f = node_normalize(Path::new(filepath));
        let w = &self.project;
        if let Ok(rel) = f.strip_prefix(w) {
            return rel.display().to_string();
        }
        let fc: Vec<_> = f.components().collect();
        let wc: Vec<_> = w.components().collect();
        let common = fc.iter().zip(&wc).take_while(|(a, b)| a == b).count();
        let mut out = PathBuf::new();
        for _ in common..wc.len() {
            out.push("..");
        }
        for c in &fc[common..] {
            out.push(c);
        }
        out.display().to_string()
    }

    /// An edit-tool request (OpenCode reports write and edit both as `edit`).
    pub fn edit_request(&self, raw: &str, write: bool) -> PermissionRequest {
        let fp = self.tool_filepath(raw);
        let args = if write {
            json!({"filePath": raw, "content": "x\n"})
        } else {
            json!({"filePath": raw, "oldString": "a", "newString": "b"})
        };
        serde_json::from_value(json!({
            "permission": "edit",
            "filepath": fp,
            "patterns": [self.tool_pattern(&fp)],
            "args": args,
        }))
        .unwrap()
    }

    /// An apply_patch request: the patch text names `raw` (Add File), patterns list it.
    pub fn patch_request(&self, raw: &str, patch: Option<&str>) -> PermissionRequest {
        let text = match patch {
            Some(t) => t.to_owned(),
            None => format!("*** Begin Patch\n*** Add File: {raw}\n+x\n*** End Patch\n"),
        };
        let fp = self.tool_filepath(raw);
        serde_json::from_value(json!({
            "permission": "edit",
            "patterns": [self.tool_pattern(&fp)],
            "args": {"patchText": text},
        }))
        .unwrap()
    }

    /// A read-tool request.
    pub fn read_request(&self, raw: &str) -> PermissionRequest {
        let fp = self.tool_filepath(raw);
        serde_json::from_value(json!({
            "permission": "read",
            "patterns": [fp],
            "args": {"filePath": raw},
        }))
        .unwrap()
    }
}

/// One corpus line (`tests/guardrail/*.jsonl`).
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// Attack family or benign group.
    pub family: String,
    /// `bash`, `edit`, `write`, `patch`, `read`, or `raw` (then `request` is used as is).
    pub kind: String,
    /// The bash command (bash).
    #[serde(default)]
    pub command: Option<String>,
    /// The file path (edit/write/patch/read): relative to the project, `~/…`, or absolute with
    /// `@P@`/`@H@`.
    #[serde(default)]
    pub path: Option<String>,
    /// The bash tool's `workdir` (with `@P@`/`@H@`).
    #[serde(default)]
    pub workdir: Option<String>,
    /// A patch text for `patch` (else an Add File of `path`).
    #[serde(default)]
    pub patch: Option<String>,
    /// The full request for `raw` (tokens substituted in every string).
    #[serde(default)]
    pub request: Option<Value>,
    /// Planted links this entry relies on (names from [`PROJECT_LINKS`]).
    #[serde(default)]
    pub setup: Vec<String>,
    /// Extra links to plant: link (relative to the project) → target.
    #[serde(default)]
    pub links: BTreeMap<String, String>,
    /// Extra regular files to plant (relative to the project) → content.
    #[serde(default)]
    pub files: BTreeMap<String, String>,
    /// Content for `.git/config` during this entry's check (e.g. a `core.hooksPath`).
    #[serde(default)]
    pub git_config: Option<String>,
    /// What the entry does, for the reader.
    pub note: String,
}

impl Entry {
    /// The request this entry stands for, in `sb`.
    pub fn request(&self, sb: &Sandbox) -> PermissionRequest {
        // Models hand tools absolute paths; OpenCode does not expand `~`, so `~/x` in a corpus
        // line stands for `$HOME/x` spelled out.
        let s = |o: &Option<String>| {
            let raw = o.as_deref().unwrap_or_default();
            let raw = match raw.strip_prefix("~/") {
                Some(rest) => format!("@H@/{rest}"),
                None => raw.to_owned(),
            };
            sb.subst(&raw)
        };
        match self.kind.as_str() {
            "bash" => bash_request(
                &s(&self.command),
                self.workdir.as_deref().map(|w| sb.subst(w)).as_deref(),
            ),
            "edit" => sb.edit_request(&s(&self.path), false),
            "write" => sb.edit_request(&s(&self.path), true),
            "patch" => sb.patch_request(
                &s(&self.path),
                self.patch.as_deref().map(|p| sb.subst(p)).as_deref(),
            ),
            "read" => sb.read_request(&s(&self.path)),
            "raw" => {
                let v = subst_json(sb, self.request.clone().expect("raw entry needs `request`"));
                serde_json::from_value(v).unwrap()
            }
            k => panic!("unknown kind {k:?} in entry {self:?}"),
        }
    }

    /// A one-line description for failure output.
    pub fn describe(&self) -> String {
        let what = self
            .command
            .as_deref()
            .or(self.path.as_deref())
            .map(str::to_owned)
            .unwrap_or_else(|| format!("{}", self.request.clone().unwrap_or_default()));
        format!("[{}/{}] {:?} — {}", self.family, self.kind, what, self.note)
    }
}

fn subst_json(sb: &Sandbox, v: Value) -> Value {
    match v {
        Value::String(s) => Value::String(sb.subst(&s)),
        Value::Array(a) => Value::Array(a.into_iter().map(|x| subst_json(sb, x)).collect()),
        Value::Object(o) => {
            Value::Object(o.into_iter().map(|(k, x)| (k, subst_json(sb, x))).collect())
        }
        other => other,
    }
}

/// Reads a corpus file (one JSON object a line; blank lines and `//` lines skipped).
pub fn load(name: &str) -> Vec<Entry> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/guardrail")
        .join(name);
    let text = fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with("//"))
        .map(|(i, l)| {
            serde_json::from_str(l).unwrap_or_else(|e| panic!("{}:{}: {e}", p.display(), i + 1))
        })
        .collect()
}
