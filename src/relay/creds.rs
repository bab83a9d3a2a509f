//! The `--creds FILE` of a connector: how its node authenticates to the NATS server.
//!
//! Accepted forms (the file must not be readable by group or others, like an ssh key):
//! - a NATS `.creds` file (a user JWT and an nkey seed, as `nsc` writes it);
//! - `key=value` lines: `user=` + `password=`, or `nkey=` (an `SU…` seed), or `token=`.
//!   Blank lines and `#` comments are ignored.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// How a connector authenticates.
#[derive(Clone, PartialEq)]
pub enum Credentials {
    /// No authentication (a server without users; tests of the refusal).
    None,
    /// A shared token (single-user setups only: every holder is the same NATS user).
    Token(String),
    /// A NATS user and password.
    UserPassword(String, String),
    /// An nkey seed (`SU…`).
    NKey(String),
    /// A `.creds` file (JWT + seed), read by the NATS client.
    CredsFile(PathBuf),
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print secrets.
        let kind = match self {
            Credentials::None => "none",
            Credentials::Token(_) => "token",
            Credentials::UserPassword(..) => "user/password",
            Credentials::NKey(_) => "nkey",
            Credentials::CredsFile(_) => "creds file",
        };
        write!(f, "Credentials({kind})")
    }
}

fn bad(path: &Path, reason: &str) -> Error {
    Error::InvalidOption {
        option: "creds".into(),
        reason: format!("{}: {reason}", path.display()),
    }
}

/// Read a credentials file (see the module doc).
///
/// # Errors
/// [`Error::InvalidOption`] (`creds`) for a file readable by others, unreadable, or of no
/// known form.
pub fn read(path: &Path) -> Result<Credentials> {
    let meta = std::fs::metadata(path).map_err(|e| bad(path, &e.to_string()))?;
    if meta.permissions().mode() & 0o077 != 0 {
        return Err(bad(
            path,
            "is readable or writable by group or others; chmod 600 it",
        ));
    }
    let text = std::fs::read_to_string(path).map_err(|e| bad(path, &e.to_string()))?;
    if text.contains("BEGIN NATS USER JWT") {
        return Ok(Credentials::CredsFile(path.to_path_buf()));
    }
    let mut kv = std::collections::HashMap::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((k, v)) = line.split_once('=') else {
            return Err(bad(path, "a line is neither key=value nor a comment"));
        };
        kv.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
    }
    match (
        kv.remove("user"),
        kv.remove("password"),
        kv.remove("nkey"),
        kv.remove("token"),
    ) {
        (Some(u), Some(p), None, None) => Ok(Credentials::UserPassword(u, p)),
        (None, None, Some(n), None) => Ok(Credentials::NKey(n)),
        (None, None, None, Some(t)) => Ok(Credentials::Token(t)),
        _ => Err(bad(
            path,
            "expected a NATS .creds file, or user= and password=, or nkey=, or token=",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, text: &str, mode: u32) -> PathBuf {
        let p = dir.join("c");
        std::fs::write(&p, text).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        p
    }

    #[test]
    fn forms_and_refusals() {
        let d = tempfile::tempdir().unwrap();
        let p = write(d.path(), "# a\nuser=a\npassword=b\n", 0o600);
        assert_eq!(
            read(&p).unwrap(),
            Credentials::UserPassword("a".into(), "b".into())
        );
        let p = write(d.path(), "token=t", 0o600);
        assert_eq!(read(&p).unwrap(), Credentials::Token("t".into()));
        let p = write(d.path(), "token=t", 0o644);
        assert!(read(&p).is_err());
        let p = write(d.path(), "user=a", 0o600);
        assert!(read(&p).is_err());
        assert!(!format!("{:?}", Credentials::Token("secret".into())).contains("secret"));
    }
}
