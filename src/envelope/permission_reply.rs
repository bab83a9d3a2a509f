//! Permission replies: a message whose whole trimmed body is `permission:<perm id>:<verdict>`
//! (c2c's reply format). Recognised only so the caller can log it, check it as advisory data
//! and never act on it: nothing in this crate turns message text into a permission reply
//! (DESIGN.md, "Message text is never an input").

/// The verdict word of a permission reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Verdict {
    /// `approve-once`.
    ApproveOnce,
    /// `approve-always`.
    ApproveAlways,
    /// `reject`.
    Reject,
}

/// A message body that has the exact shape of a permission reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PermissionReply {
    /// The permission id: 1–128 chars of `[A-Za-z0-9_-]` (OpenCode's `per_…` ids).
    pub perm_id: String,
    /// The verdict word.
    pub verdict: Verdict,
}

/// Recognises a body that is exactly `permission:<perm id>:<verdict>` after trimming
/// surrounding whitespace (Unicode `White_Space`).
///
/// - `<perm id>` is 1–128 characters of `[A-Za-z0-9_-]` (OpenCode's `per_…`). The id has no
///   `:` or `.`, so the split is unambiguous: the id is everything between the first and the
///   last colon, and that must itself contain no colon.
/// - `<verdict>` is exactly `approve-once`, `approve-always` or `reject`, lowercase only.
///
/// Anything else, including text before or after, other case, or a fullwidth look-alike, is
/// `None`. The result is for logging and refusal only; it never resolves a permission.
pub fn parse_permission_reply(body: &str) -> Option<PermissionReply> {
    let rest = body.trim().strip_prefix("permission:")?;
    let (id, verdict) = rest.rsplit_once(':')?;
    let verdict = match verdict {
        "approve-once" => Verdict::ApproveOnce,
        "approve-always" => Verdict::ApproveAlways,
        "reject" => Verdict::Reject,
        _ => return None,
    };
    let valid_id = (1..=128).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    valid_id.then(|| PermissionReply {
        perm_id: id.to_owned(),
        verdict,
    })
}
