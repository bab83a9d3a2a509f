//! The host-local verdict side channel (c2c's B098 exception for hook-based clients).
//!
//! A human at this machine runs `c2c-bridge approval-reply <token> allow|deny`, which writes
//! `approval-verdict/<token>.json`; a hook waiting in `c2c-bridge await-reply --token <token>`
//! reads **only** that file. The channel is local by construction: the directory is 0700 and
//! the file 0600 inside the user's private broker root, so only this user can write a
//! verdict. No message (DM, room, broadcast) can reach it, and nothing in the broker ever
//! writes it on a peer's behalf.
//!
//! # The file
//!
//! `{"token": "<token>", "verdict": "allow"|"deny", "reason": null|"<text>", "ts": <epoch s>,
//! "writer": "c2c-bridge"}`, written atomically (temp file 0600 + fsync + rename; the rename
//! replaces a planted symlink instead of following it), never read through a symlink. A
//! later write for the same token replaces the earlier verdict.
//!
//! # Tokens
//!
//! `[A-Za-z0-9_-]{1,128}`: a file-name stem that cannot leave the directory (no `.`, no `/`).

use std::io::{ErrorKind, Read};
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

use serde_json::{json, Value};

use crate::error::{Error, Result};
use crate::store::file::{ensure_private_dir, open_read_nofollow, write_bytes_atomic};
use crate::store::BrokerRoot;

/// The directory under the broker root.
pub const VERDICT_DIR: &str = "approval-verdict";

/// A host-local decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Let the tool call run.
    Allow,
    /// Refuse it.
    Deny,
}

impl Decision {
    /// `allow` or `deny`.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Deny => "deny",
        }
    }

    /// Parse `allow` or `deny` (exact).
    ///
    /// # Errors
    /// [`Error::InvalidOption`] (option `verdict`).
    pub fn parse(s: &str) -> Result<Decision> {
        match s {
            "allow" => Ok(Decision::Allow),
            "deny" => Ok(Decision::Deny),
            other => Err(Error::InvalidOption {
                option: "verdict".into(),
                reason: format!("{other:?} is not \"allow\" or \"deny\""),
            }),
        }
    }
}

/// A verdict as read back.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// The token.
    pub token: String,
    /// The decision.
    pub decision: Decision,
    /// The operator's reason, if given.
    pub reason: Option<String>,
    /// When it was written, epoch seconds.
    pub ts: f64,
}

/// Check a token: 1–128 chars of `[A-Za-z0-9_-]`.
///
/// # Errors
/// [`Error::InvalidId`] (kind `token`).
pub fn validate_token(token: &str) -> Result<()> {
    let ok = !token.is_empty()
        && token.len() <= 128
        && token
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if ok {
        Ok(())
    } else {
        Err(Error::InvalidId {
            kind: "token",
            value: token.to_string(),
            reason: "must be 1–128 characters of A–Z, a–z, 0–9, '_' and '-'".into(),
        })
    }
}

/// `approval-verdict/`, created 0700 when missing; refused when it is a symlink, not ours,
/// or writable by group or others (anyone who can write it could plant a verdict).
fn verdict_dir(root: &BrokerRoot) -> Result<PathBuf> {
    let dir = ensure_private_dir(&root.path().join(VERDICT_DIR))?;
    let meta = std::fs::symlink_metadata(&dir).map_err(|e| Error::io(&dir, e))?;
    let uid = nix::unistd::geteuid().as_raw();
    if meta.uid() != uid || meta.mode() & 0o022 != 0 {
        return Err(Error::RootInsecure {
            path: dir,
            reason: format!(
                "owner uid {} / mode {:o}: it must belong to uid {uid} and not be writable by group or others (chmod 700)",
                meta.uid(),
                meta.mode() & 0o777
            ),
        });
    }
    Ok(dir)
}

/// Write the verdict for `token`; returns the file written.
///
/// # Errors
/// [`Error::InvalidId`] for a bad token; [`Error::RootInsecure`] for an unsafe directory;
/// [`Error::Io`].
pub fn write_verdict(
    root: &BrokerRoot,
    token: &str,
    decision: Decision,
    reason: Option<&str>,
) -> Result<PathBuf> {
    validate_token(token)?;
    let dir = verdict_dir(root)?;
    let path = dir.join(format!("{token}.json"));
    let doc = json!({
        "token": token,
        "verdict": decision.as_str(),
        "reason": reason,
        "ts": crate::time::now_secs(),
        "writer": "c2c-bridge",
    });
    let bytes = serde_json::to_vec(&doc).map_err(|e| Error::io(&path, e.into()))?;
    write_bytes_atomic(&path, &bytes)?;
    Ok(path)
}

/// Read the verdict for `token`, `None` while there is none.
///
/// # Errors
/// [`Error::InvalidId`] for a bad token; [`Error::RootInsecure`] for an unsafe directory or
/// a verdict file that is not a regular file of ours (a symlink is never followed);
/// [`Error::StoreCorrupt`] for a file that is not a verdict (it is left as it is);
/// [`Error::Io`].
pub fn read_verdict(root: &BrokerRoot, token: &str) -> Result<Option<Verdict>> {
    validate_token(token)?;
    let dir = root.path().join(VERDICT_DIR);
    if !dir.exists() {
        return Ok(None);
    }
    let dir = verdict_dir(root)?;
    let path = dir.join(format!("{token}.json"));
    let mut file = match open_read_nofollow(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(nix::libc::ELOOP) => {
            return Err(Error::RootInsecure {
                path,
                reason: "it is a symlink; a verdict is only read from a regular file".into(),
            })
        }
        Err(e) => return Err(Error::io(&path, e)),
    };
    let meta = file.metadata().map_err(|e| Error::io(&path, e))?;
    if !meta.is_file() || meta.uid() != nix::unistd::geteuid().as_raw() {
        return Err(Error::RootInsecure {
            path,
            reason: "it is not a regular file owned by this user".into(),
        });
    }
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .map_err(|e| Error::io(&path, e))?;
    let corrupt = |detail: String| Error::StoreCorrupt {
        path: path.clone(),
        copy: None,
        detail,
    };
    let v: Value = serde_json::from_slice(&bytes).map_err(|e| corrupt(e.to_string()))?;
    let decision = v
        .get("verdict")
        .and_then(Value::as_str)
        .ok_or_else(|| corrupt("no \"verdict\" string".into()))
        .and_then(|s| Decision::parse(s).map_err(|_| corrupt(format!("verdict {s:?}"))))?;
    if v.get("token")
        .and_then(Value::as_str)
        .is_some_and(|t| t != token)
    {
        return Err(corrupt("the file names another token".into()));
    }
    Ok(Some(Verdict {
        token: token.to_string(),
        decision,
        reason: v.get("reason").and_then(Value::as_str).map(str::to_string),
        ts: v.get("ts").and_then(Value::as_f64).unwrap_or(0.0),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::root::RootSource;
    use crate::ErrorCode;
    use std::os::unix::fs::PermissionsExt;

    fn root() -> (tempfile::TempDir, BrokerRoot) {
        let d = tempfile::tempdir().unwrap();
        std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let r = BrokerRoot::open(d.path(), RootSource::Explicit).unwrap();
        (d, r)
    }

    #[test]
    fn roundtrip_modes_and_overwrite() {
        let (_d, r) = root();
        assert_eq!(read_verdict(&r, "tok_1").unwrap(), None);
        let p = write_verdict(&r, "tok_1", Decision::Allow, Some("looks fine")).unwrap();
        let v = read_verdict(&r, "tok_1").unwrap().unwrap();
        assert_eq!(v.decision, Decision::Allow);
        assert_eq!(v.reason.as_deref(), Some("looks fine"));
        assert!(v.ts > 1.7e9);
        assert_eq!(std::fs::metadata(&p).unwrap().mode() & 0o777, 0o600);
        let dir = r.path().join(VERDICT_DIR);
        assert_eq!(std::fs::metadata(&dir).unwrap().mode() & 0o777, 0o700);
        write_verdict(&r, "tok_1", Decision::Deny, None).unwrap();
        let v = read_verdict(&r, "tok_1").unwrap().unwrap();
        assert_eq!((v.decision, v.reason), (Decision::Deny, None));
        assert_eq!(read_verdict(&r, "tok_2").unwrap(), None);
    }

    #[test]
    fn tokens_are_sanitised() {
        let (_d, r) = root();
        for bad in [
            "",
            "../x",
            "a/b",
            "a.json",
            ".x",
            "a b",
            "é",
            &"t".repeat(129),
        ] {
            assert_eq!(
                write_verdict(&r, bad, Decision::Allow, None)
                    .unwrap_err()
                    .code(),
                ErrorCode::InvalidId,
                "{bad:?}"
            );
            assert_eq!(
                read_verdict(&r, bad).unwrap_err().code(),
                ErrorCode::InvalidId
            );
        }
        write_verdict(&r, &"t".repeat(128), Decision::Allow, None).unwrap();
        assert_eq!(
            Decision::parse("approve").unwrap_err().code(),
            ErrorCode::InvalidOption
        );
    }

    #[test]
    fn symlinks_are_never_followed() {
        let (d, r) = root();
        let elsewhere = tempfile::tempdir().unwrap();
        // A symlinked directory is refused.
        std::os::unix::fs::symlink(elsewhere.path(), d.path().join(VERDICT_DIR)).unwrap();
        assert_eq!(
            write_verdict(&r, "t", Decision::Allow, None)
                .unwrap_err()
                .code(),
            ErrorCode::RootInsecure
        );
        assert_eq!(
            read_verdict(&r, "t").unwrap_err().code(),
            ErrorCode::RootInsecure
        );
        std::fs::remove_file(d.path().join(VERDICT_DIR)).unwrap();
        // A symlinked verdict file is not read, and a write replaces the link, not its target.
        write_verdict(&r, "other", Decision::Deny, None).unwrap();
        let target = elsewhere.path().join("planted.json");
        std::fs::write(&target, br#"{"token":"t","verdict":"allow"}"#).unwrap();
        std::os::unix::fs::symlink(&target, d.path().join(VERDICT_DIR).join("t.json")).unwrap();
        assert_eq!(
            read_verdict(&r, "t").unwrap_err().code(),
            ErrorCode::RootInsecure
        );
        write_verdict(&r, "t", Decision::Deny, None).unwrap();
        assert_eq!(
            std::fs::read(&target).unwrap(),
            br#"{"token":"t","verdict":"allow"}"#
        );
        assert_eq!(
            read_verdict(&r, "t").unwrap().unwrap().decision,
            Decision::Deny
        );
    }

    #[test]
    fn writable_dir_and_bad_files_are_refused() {
        let (d, r) = root();
        write_verdict(&r, "t", Decision::Allow, None).unwrap();
        let dir = d.path().join(VERDICT_DIR);
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert_eq!(
            read_verdict(&r, "t").unwrap_err().code(),
            ErrorCode::RootInsecure
        );
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        for bad in [
            &b"garbage"[..],
            br#"{"verdict":"yes"}"#,
            br#"{"token":"u","verdict":"allow"}"#,
        ] {
            std::fs::write(dir.join("t.json"), bad).unwrap();
            assert_eq!(
                read_verdict(&r, "t").unwrap_err().code(),
                ErrorCode::StoreCorrupt
            );
        }
    }
}
