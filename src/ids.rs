//! Validation of the ids that name things in the broker root.
//!
//! Rules from c2c 0.8 (docs/c2c-broker-format.md), tightened where c2c is unsafe: c2c uses
//! session ids unvalidated as path components; here they must be a safe file-name stem.

use crate::error::{Error, Result};

/// Aliases c2c reserves for itself.
pub const RESERVED_ALIASES: [&str; 2] = ["c2c", "c2c-system"];

fn charset_ok(s: &str, extra: &[char]) -> bool {
    s.chars()
        .all(|c| c.is_ascii_alphanumeric() || extra.contains(&c))
}

/// An alias: 1–64 chars of `[A-Za-z0-9._-]`, no leading dot, not `c2c` / `c2c-system`
/// (compared case-insensitively).
///
/// # Errors
/// [`Error::InvalidId`] naming the broken rule.
pub fn validate_alias(alias: &str) -> Result<()> {
    let bad = |reason: &str| Error::InvalidId {
        kind: "alias",
        value: alias.to_string(),
        reason: reason.to_string(),
    };
    if alias.is_empty() || alias.len() > 64 {
        return Err(bad("must be 1–64 characters"));
    }
    if !charset_ok(alias, &['.', '_', '-']) {
        return Err(bad("may contain only A–Z, a–z, 0–9, '.', '_' and '-'"));
    }
    if alias.starts_with('.') {
        return Err(bad("must not start with '.'"));
    }
    if RESERVED_ALIASES
        .iter()
        .any(|r| r.eq_ignore_ascii_case(alias))
    {
        return Err(bad("is reserved by c2c"));
    }
    Ok(())
}

/// A session id, which is also a file-name stem (`<session_id>.inbox.json`): 1–128 chars of
/// `[A-Za-z0-9._-]`, no leading dot, no `..`.
///
/// # Errors
/// [`Error::InvalidId`] naming the broken rule.
pub fn validate_session_id(id: &str) -> Result<()> {
    let bad = |reason: &str| Error::InvalidId {
        kind: "session id",
        value: id.to_string(),
        reason: reason.to_string(),
    };
    if id.is_empty() || id.len() > 128 {
        return Err(bad("must be 1–128 characters"));
    }
    if !charset_ok(id, &['.', '_', '-']) {
        return Err(bad("may contain only A–Z, a–z, 0–9, '.', '_' and '-'"));
    }
    if id.starts_with('.') || id.contains("..") {
        return Err(bad("must not start with '.' or contain '..'"));
    }
    Ok(())
}

/// A room id: 1–64 chars of `[A-Za-z0-9_-]` (c2c's rule).
///
/// # Errors
/// [`Error::InvalidId`].
pub fn validate_room_id(id: &str) -> Result<()> {
    if id.is_empty() || id.len() > 64 || !charset_ok(id, &['_', '-']) {
        return Err(Error::InvalidId {
            kind: "room id",
            value: id.to_string(),
            reason: "must be 1–64 characters of A–Z, a–z, 0–9, '_' and '-'".into(),
        });
    }
    Ok(())
}

/// A perm id (OpenCode's `per_…` ids, uuids): 1–128 chars of `[A-Za-z0-9_-]` — the same set a
/// `permission:<id>:<verdict>` reply can name, so every slot can be answered.
///
/// # Errors
/// [`Error::InvalidId`].
pub fn validate_perm_id(id: &str) -> Result<()> {
    if id.is_empty() || id.len() > 128 || !charset_ok(id, &['_', '-']) {
        return Err(Error::InvalidId {
            kind: "perm id",
            value: id.to_string(),
            reason: "must be 1–128 characters of A–Z, a–z, 0–9, '_' and '-'".into(),
        });
    }
    Ok(())
}

/// The default alias of a session: `<directory basename>-<4 hex>`, where the basename is
/// reduced to the alias charset (other characters become `-`, leading dots and dashes are
/// dropped, at most 48 chars, `opencode` when nothing is left) and the 4 hex chars are the
/// start of sha256(session id), so a session keeps its alias across restarts.
pub fn default_alias(directory: &str, session_id: &str) -> String {
    use sha2::{Digest, Sha256};
    let base = std::path::Path::new(directory)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let cleaned: String = base
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let trimmed: String = cleaned
        .trim_start_matches(['.', '-'])
        .chars()
        .take(48)
        .collect();
    let stem = if trimmed.is_empty() {
        "opencode".to_string()
    } else {
        trimmed
    };
    let hash = hex::encode(Sha256::digest(session_id.as_bytes()));
    format!("{stem}-{}", &hash[..4])
}

/// Case-insensitive alias equality (c2c compares aliases case-insensitively everywhere).
pub fn alias_eq(a: &str, b: &str) -> bool {
    a.eq_ignore_ascii_case(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases() {
        for ok in ["a", "A.b_c-9", &"x".repeat(64), "C2C-bot"] {
            validate_alias(ok).unwrap();
        }
        for bad in [
            "",
            ".hidden",
            "a b",
            "a/b",
            "é",
            &"x".repeat(65),
            "c2c",
            "C2C-System",
            "a\n",
        ] {
            assert_eq!(
                validate_alias(bad).unwrap_err().code(),
                crate::ErrorCode::InvalidId,
                "{bad:?}"
            );
        }
    }

    #[test]
    fn session_ids_are_safe_file_stems() {
        for ok in ["ses_3fA9", "0b6d-uuid-like", "a.b"] {
            validate_session_id(ok).unwrap();
        }
        for bad in [
            "",
            "..",
            "../x",
            "a/b",
            ".x",
            "a..b",
            "a\0b",
            &"s".repeat(129),
        ] {
            assert!(validate_session_id(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn default_alias_is_valid_and_stable() {
        for dir in [
            "/home/u/my project",
            "/",
            "/x/.hidden",
            "/x/répertoire",
            "/x/c2c",
        ] {
            let a = default_alias(dir, "ses_1");
            validate_alias(&a).unwrap();
            assert_eq!(a, default_alias(dir, "ses_1"));
            assert_ne!(a, default_alias(dir, "ses_2"));
        }
        assert!(default_alias("/home/u/my project", "s").starts_with("my-project-"));
        assert!(default_alias("/", "s").starts_with("opencode-"));
    }

    #[test]
    fn room_and_perm_ids() {
        validate_room_id("dev-room_1").unwrap();
        assert!(validate_room_id("a.b").is_err());
        assert!(validate_room_id("../x").is_err());
        validate_perm_id("per_abc-1_2").unwrap();
        assert!(validate_perm_id("per_a.b").is_err());
        assert!(validate_perm_id("per:1").is_err());
        assert!(validate_perm_id("per/abc").is_err());
        assert!(validate_perm_id("").is_err());
    }
}
