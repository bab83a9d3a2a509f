//! Where the broker root is, and whether it is safe to use.
//!
//! Resolution follows c2c 0.8 (docs/c2c-broker-format.md):
//! 1. an explicit root (plugin option / `Broker.open({root})`),
//! 2. `C2C_MCP_BROKER_ROOT`,
//! 3. `$XDG_STATE_HOME/c2c/repos/<fp>/broker` (c2c ≥ 0.9 also honours `C2C_STATE_HOME`, which
//!    we check first),
//! 4. `$HOME/.c2c/repos/<fp>/broker`,
//!
//! where `<fp>` is the first 12 hex chars of sha256(`git config remote.origin.url`), else of
//! the repository's top-level path, else the literal `default`.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::store::file::ensure_private_dir;

/// Where the root came from (shown by `doctor`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RootSource {
    /// An explicit `root` option.
    Explicit,
    /// `C2C_MCP_BROKER_ROOT`.
    EnvBrokerRoot,
    /// `C2C_STATE_HOME/c2c/repos/<fp>/broker`.
    C2cStateHome,
    /// `XDG_STATE_HOME/c2c/repos/<fp>/broker`.
    XdgStateHome,
    /// `HOME/.c2c/repos/<fp>/broker`.
    Home,
}

impl RootSource {
    /// A short stable name, e.g. `"C2C_MCP_BROKER_ROOT"`.
    pub fn as_str(self) -> &'static str {
        match self {
            RootSource::Explicit => "option",
            RootSource::EnvBrokerRoot => "C2C_MCP_BROKER_ROOT",
            RootSource::C2cStateHome => "C2C_STATE_HOME",
            RootSource::XdgStateHome => "XDG_STATE_HOME",
            RootSource::Home => "HOME",
        }
    }
}

/// An opened, checked broker root directory.
#[derive(Debug, Clone)]
pub struct BrokerRoot {
    path: PathBuf,
    source: RootSource,
}

/// The environment values root resolution reads, passed in (built by
/// `config::Environment::root_env`, the one reader of the environment) so that resolution
/// itself never reads the process environment.
#[derive(Debug, Clone, Default)]
pub struct RootEnv {
    /// `C2C_MCP_BROKER_ROOT`.
    pub broker_root: Option<String>,
    /// `C2C_STATE_HOME`.
    pub c2c_state_home: Option<String>,
    /// `XDG_STATE_HOME`.
    pub xdg_state_home: Option<String>,
    /// `HOME`.
    pub home: Option<String>,
}

/// c2c's repository fingerprint for `dir`: first 12 hex chars of sha256 of the origin URL,
/// else of the repository top-level path, else `"default"`. Runs `git` (absent git or a
/// directory outside any repository yields `"default"`).
pub fn repo_fingerprint(dir: &Path) -> String {
    repo_fingerprint_basis(dir).0
}

/// [`repo_fingerprint`] and what it was computed from, for `doctor` and `/peers`:
/// `remote.origin.url <url>`, `repository top level <path>` or `no git repository`.
pub fn repo_fingerprint_basis(dir: &Path) -> (String, String) {
    let git = |args: &[&str]| -> Option<String> {
        let out = std::process::Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output()
            .ok()?;
        if !out.status.success() {
            return None;
        }
        let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
        (!s.is_empty()).then_some(s)
    };
    let basis = git(&["config", "--get", "remote.origin.url"])
        .map(|u| (u, "remote.origin.url"))
        .or_else(|| git(&["rev-parse", "--show-toplevel"]).map(|t| (t, "repository top level")));
    match basis {
        Some((b, what)) => (
            hex::encode(Sha256::digest(b.as_bytes()))[..12].to_string(),
            format!("{what} {b}"),
        ),
        None => ("default".to_string(), "no git repository".to_string()),
    }
}

/// Why the root at `source` is the one in use, in one sentence for the user (`/peers`,
/// `c2c-bridge doctor`); `dir` is the project directory of the fingerprint.
pub fn describe_source(source: RootSource, dir: &Path) -> String {
    match source {
        RootSource::Explicit => "set explicitly (the brokerRoot option or --root)".to_string(),
        RootSource::EnvBrokerRoot => {
            "set by the environment variable C2C_MCP_BROKER_ROOT".to_string()
        }
        RootSource::C2cStateHome | RootSource::XdgStateHome | RootSource::Home => {
            let (fp, basis) = repo_fingerprint_basis(dir);
            format!(
                "c2c's per-repository default under {}: fingerprint {fp} of {basis}; sessions of other repositories use other roots unless brokerRoot (or C2C_MCP_BROKER_ROOT) names one shared root",
                source.as_str()
            )
        }
    }
}

/// Pick the root path (without touching the disk) as c2c would.
///
/// # Errors
/// [`Error::InvalidOption`] when nothing gives a location (no explicit root, no variable and
/// no `HOME`).
pub fn resolve_path(
    explicit: Option<&Path>,
    env: &RootEnv,
    project_dir: &Path,
) -> Result<(PathBuf, RootSource)> {
    if let Some(p) = explicit {
        return Ok((p.to_path_buf(), RootSource::Explicit));
    }
    if let Some(p) = &env.broker_root {
        return Ok((PathBuf::from(p), RootSource::EnvBrokerRoot));
    }
    let under = |base: &str| {
        let fp = repo_fingerprint(project_dir);
        PathBuf::from(base)
            .join("c2c")
            .join("repos")
            .join(fp)
            .join("broker")
    };
    if let Some(s) = &env.c2c_state_home {
        return Ok((under(s), RootSource::C2cStateHome));
    }
    if let Some(s) = &env.xdg_state_home {
        return Ok((under(s), RootSource::XdgStateHome));
    }
    if let Some(h) = &env.home {
        let fp = repo_fingerprint(project_dir);
        let p = PathBuf::from(h)
            .join(".c2c")
            .join("repos")
            .join(fp)
            .join("broker");
        return Ok((p, RootSource::Home));
    }
    Err(Error::InvalidOption {
        option: "root".into(),
        reason: "no broker root: set the root option, C2C_MCP_BROKER_ROOT, XDG_STATE_HOME or HOME"
            .into(),
    })
}

impl BrokerRoot {
    /// Create (0700) or open the root at `path` and check that it is safe: a directory owned
    /// by the current user and not writable by group or others. The path is canonicalised
    /// first, so a symlink *to* the root is fine; nothing *inside* the root is followed.
    ///
    /// # Errors
    /// [`Error::RootInsecure`] for a foreign owner or group/other write bits;
    /// [`Error::Io`] when it cannot be created or inspected.
    pub fn open(path: &Path, source: RootSource) -> Result<BrokerRoot> {
        use std::os::unix::fs::DirBuilderExt;
        if !path.exists() {
            // Like `mkdir -p` with mode 0700; parents we create are 0700 too.
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(path)
                .map_err(|e| Error::io(path, e))?;
        }
        let canonical = std::fs::canonicalize(path).map_err(|e| Error::io(path, e))?;
        let meta = std::fs::metadata(&canonical).map_err(|e| Error::io(&canonical, e))?;
        if !meta.is_dir() {
            return Err(Error::RootInsecure {
                path: canonical,
                reason: "it is not a directory".into(),
            });
        }
        let uid = nix::unistd::geteuid().as_raw();
        if meta.uid() != uid {
            return Err(Error::RootInsecure {
                path: canonical,
                reason: format!(
                    "it is owned by uid {} but c2c-bridge runs as uid {uid}; use a root you own",
                    meta.uid()
                ),
            });
        }
        // Group or others must neither write (they could plant messages or registrations)
        // nor read (messages are private). c2c creates the root 0700.
        if meta.mode() & 0o077 != 0 {
            return Err(Error::RootInsecure {
                path: canonical,
                reason: format!(
                    "its mode is {:o}: group or others can read or write it; run `chmod 700` on it",
                    meta.mode() & 0o777
                ),
            });
        }
        Ok(BrokerRoot {
            path: canonical,
            source,
        })
    }

    /// Open an existing root for reading (the CLI's read-only commands): never creates it.
    ///
    /// # Errors
    /// [`Error::Io`] (`NotFound`) when it does not exist; as [`BrokerRoot::open`] otherwise.
    pub fn open_existing(path: &Path, source: RootSource) -> Result<BrokerRoot> {
        if !path.is_dir() {
            return Err(Error::io(
                path,
                std::io::Error::new(std::io::ErrorKind::NotFound, "no broker root here"),
            ));
        }
        BrokerRoot::open(path, source)
    }

    /// The canonical root directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where the root came from.
    pub fn source(&self) -> RootSource {
        self.source
    }

    /// `registry.json`.
    pub fn registry(&self) -> PathBuf {
        self.path.join("registry.json")
    }

    /// `<session_id>.inbox.json` (the id must already be validated).
    pub fn inbox(&self, session_id: &str) -> PathBuf {
        self.path.join(format!("{session_id}.inbox.json"))
    }

    /// `archive/<session_id>.jsonl`, creating `archive/` (0700) if needed.
    ///
    /// # Errors
    /// As [`ensure_private_dir`].
    pub fn archive(&self, session_id: &str) -> Result<PathBuf> {
        let dir = ensure_private_dir(&self.path.join("archive"))?;
        Ok(dir.join(format!("{session_id}.jsonl")))
    }

    /// `dead-letter.jsonl`.
    pub fn dead_letter(&self) -> PathBuf {
        self.path.join("dead-letter.jsonl")
    }

    /// `pending_permissions.json`.
    pub fn pending(&self) -> PathBuf {
        self.path.join("pending_permissions.json")
    }

    /// `broker.log`.
    pub fn log(&self) -> PathBuf {
        self.path.join("broker.log")
    }

    /// `rooms/<room_id>/`, created (0700, with `rooms/`) when `create` is set. Either way a
    /// symlink or non-directory in its place (or in place of `rooms/`) is refused.
    ///
    /// # Errors
    /// As [`ensure_private_dir`].
    pub fn room_dir(&self, room_id: &str, create: bool) -> Result<PathBuf> {
        let rooms = self.path.join("rooms");
        let dir = rooms.join(room_id);
        if create {
            ensure_private_dir(&rooms)?;
            ensure_private_dir(&dir)?;
        } else {
            for p in [&rooms, &dir] {
                if let Ok(m) = std::fs::symlink_metadata(p) {
                    if !m.file_type().is_dir() {
                        return Err(Error::RootInsecure {
                            path: p.clone(),
                            reason: "it is a symlink or not a directory; c2c-bridge never follows symlinks inside the broker root".into(),
                        });
                    }
                }
            }
        }
        Ok(dir)
    }

    /// Create `rooms/<room_id>/` (0700, `rooms/` too if needed) with one `mkdir`, so of two
    /// creators exactly one succeeds (c2c's `create_room` relies on the same `EEXIST`).
    ///
    /// # Errors
    /// [`Error::RoomExists`] when it exists; as [`ensure_private_dir`] for `rooms/`.
    pub fn create_room_dir(&self, room_id: &str) -> Result<PathBuf> {
        use std::os::unix::fs::DirBuilderExt;
        let rooms = ensure_private_dir(&self.path.join("rooms"))?;
        let dir = rooms.join(room_id);
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(Error::RoomExists {
                room_id: room_id.to_string(),
            }),
            Err(e) => Err(Error::io(&dir, e)),
        }
    }

    /// `rooms/` (not created).
    pub fn rooms_dir(&self) -> PathBuf {
        self.path.join("rooms")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn resolution_order_matches_c2c() {
        let dir = tempfile::tempdir().unwrap();
        let mut env = RootEnv {
            broker_root: Some("/b".into()),
            c2c_state_home: Some("/c".into()),
            xdg_state_home: Some("/x".into()),
            home: Some("/h".into()),
        };
        let explicit = PathBuf::from("/e");
        assert_eq!(
            resolve_path(Some(&explicit), &env, dir.path()).unwrap().0,
            explicit
        );
        assert_eq!(
            resolve_path(None, &env, dir.path()).unwrap(),
            (PathBuf::from("/b"), RootSource::EnvBrokerRoot)
        );
        env.broker_root = None;
        assert_eq!(
            resolve_path(None, &env, dir.path()).unwrap().0,
            PathBuf::from("/c/c2c/repos/default/broker")
        );
        env.c2c_state_home = None;
        assert_eq!(
            resolve_path(None, &env, dir.path()).unwrap().0,
            PathBuf::from("/x/c2c/repos/default/broker")
        );
        env.xdg_state_home = None;
        assert_eq!(
            resolve_path(None, &env, dir.path()).unwrap().0,
            PathBuf::from("/h/.c2c/repos/default/broker")
        );
        env.home = None;
        assert_eq!(
            resolve_path(None, &env, dir.path()).unwrap_err().code(),
            crate::ErrorCode::InvalidOption
        );
    }

    #[test]
    fn fingerprint_uses_origin_url() {
        let dir = tempfile::tempdir().unwrap();
        let run = |args: &[&str]| {
            std::process::Command::new("git")
                .arg("-C")
                .arg(dir.path())
                .args(args)
                .output()
                .map(|o| o.status.success())
                .unwrap_or(false)
        };
        if !run(&["init", "-q"]) {
            eprintln!("git unavailable; skipping");
            return;
        }
        let top = std::fs::canonicalize(dir.path()).unwrap();
        let by_path =
            hex::encode(Sha256::digest(top.to_str().unwrap().as_bytes()))[..12].to_string();
        assert_eq!(repo_fingerprint(dir.path()), by_path);
        assert!(run(&[
            "remote",
            "add",
            "origin",
            "https://example.invalid/r.git"
        ]));
        let by_url =
            hex::encode(Sha256::digest(b"https://example.invalid/r.git"))[..12].to_string();
        assert_eq!(repo_fingerprint(dir.path()), by_url);
    }

    #[test]
    fn creates_0700_and_refuses_group_writable() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("a/b/broker");
        let r = BrokerRoot::open(&root, RootSource::Explicit).unwrap();
        let mode = std::fs::metadata(r.path()).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o770)).unwrap();
        let err = BrokerRoot::open(&root, RootSource::Explicit).unwrap_err();
        assert_eq!(err.code(), crate::ErrorCode::RootInsecure);
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o707)).unwrap();
        assert_eq!(
            BrokerRoot::open(&root, RootSource::Explicit)
                .unwrap_err()
                .code(),
            crate::ErrorCode::RootInsecure
        );
    }

    #[test]
    fn symlinked_subdir_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let r = BrokerRoot::open(&dir.path().join("root"), RootSource::Explicit).unwrap();
        let elsewhere = dir.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, r.path().join("archive")).unwrap();
        assert_eq!(
            r.archive("s1").unwrap_err().code(),
            crate::ErrorCode::RootInsecure
        );
    }
}
