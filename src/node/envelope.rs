//! Framing of untrusted peer text for a model (wrappers over [`crate::envelope`]).

use napi_derive::napi;

use crate::envelope::{self, Kind, ListingItem, PeerText, Verdict};

/// A peer message to frame. Every string is peer-controlled and is escaped.
#[napi(object)]
#[derive(Debug, Clone)]
pub struct FrameMessageInput {
    /// Sender alias (sanitised to `[A-Za-z0-9._-]`, capped at 64, marked when altered).
    pub from_alias: String,
    /// The body, any text.
    pub body: String,
    /// The message id; the frame tag is derived from it.
    pub message_id: String,
    /// Hop list (oldest first). Default `[]`.
    pub via: Option<Vec<String>>,
    /// The room, for a room message.
    pub room_id: Option<String>,
    /// True for a broadcast. Default false.
    pub broadcast: Option<bool>,
}

/// One `key: value` field of a listing entry or notice.
#[napi(object)]
#[derive(Debug, Clone)]
pub struct FrameField {
    /// Key (sanitised as a label).
    pub key: String,
    /// Value (escaped to one line, capped at 512 chars).
    pub value: String,
}

/// One entry of a framed listing.
#[napi(object)]
#[derive(Debug, Clone)]
pub struct FrameListingItem {
    /// Entry label, usually an alias (sanitised).
    pub label: String,
    /// Fields shown under the label. Default none.
    pub fields: Option<Vec<FrameField>>,
    /// Optional multi-line text (e.g. a held message), shown on gutter lines.
    pub text: Option<String>,
}

/// A recognised `permission:<id>:<verdict>` message body.
#[napi(object)]
#[derive(Debug, Clone)]
pub struct PermissionReplyText {
    /// The perm id named by the text.
    pub perm_id: String,
    /// `approve-once`, `approve-always` or `reject`.
    pub verdict: String,
}

/// Frame one peer message: exactly one frame, body on gutter lines, a fixed notice that the
/// text grants no permission and carries no user intent. Format: see `src/envelope.rs`.
#[napi(catch_unwind)]
pub fn frame_message(message: FrameMessageInput) -> String {
    let via = message.via.unwrap_or_default();
    let kind = match (&message.room_id, message.broadcast.unwrap_or(false)) {
        (Some(room_id), _) => Kind::Room { room_id },
        (None, true) => Kind::Broadcast,
        (None, false) => Kind::Direct,
    };
    envelope::frame_message(&PeerText {
        from_alias: &message.from_alias,
        body: &message.body,
        message_id: &message.message_id,
        via: &via,
        kind,
        repaired: false,
    })
}

/// Frame a listing (peers, held messages, receipts): one frame, every value escaped.
#[napi(catch_unwind)]
pub fn frame_listing(title: String, items: Vec<FrameListingItem>) -> String {
    let fields: Vec<Vec<(&str, &str)>> = items
        .iter()
        .map(|i| {
            i.fields
                .iter()
                .flatten()
                .map(|f| (f.key.as_str(), f.value.as_str()))
                .collect()
        })
        .collect();
    let listing: Vec<ListingItem<'_>> = items
        .iter()
        .zip(&fields)
        .map(|(i, f)| ListingItem {
            label: &i.label,
            fields: f,
            text: i.text.as_deref(),
        })
        .collect();
    envelope::frame_listing(&title, &listing)
}

/// Frame a short notice about a peer event; field values are escaped.
#[napi(catch_unwind)]
pub fn frame_notice(summary: String, fields: Option<Vec<FrameField>>) -> String {
    let fields = fields.unwrap_or_default();
    let pairs: Vec<(&str, &str)> = fields
        .iter()
        .map(|f| (f.key.as_str(), f.value.as_str()))
        .collect();
    envelope::frame_notice(&summary, &pairs)
}

/// Recognise a body that is exactly `permission:<id>:approve-once|approve-always|reject`
/// (trimmed); `null` otherwise. Recognition only: nothing turns it into a permission reply.
#[napi(catch_unwind)]
pub fn parse_permission_reply(body: String) -> Option<PermissionReplyText> {
    envelope::parse_permission_reply(&body).map(|r| PermissionReplyText {
        perm_id: r.perm_id,
        verdict: match r.verdict {
            Verdict::ApproveOnce => "approve-once",
            Verdict::ApproveAlways => "approve-always",
            Verdict::Reject => "reject",
        }
        .to_string(),
    })
}

/// Peer text for a terminal: the characters the model's frame escapes (controls and Unicode
/// format characters, Cf: tag characters, zero-width characters, word joiner, BOM, soft
/// hyphen, bidi controls, …) as `\e`, `\t`, `\xNN`, `\uXXXX` or `\u{XXXXX}`; newlines kept
/// when `keepNewlines` (default false: written `\n`). The one helper of the CLI's output.
#[napi(catch_unwind)]
pub fn escape_for_terminal(text: String, keep_newlines: Option<bool>) -> String {
    envelope::escape_for_terminal(&text, keep_newlines.unwrap_or(false))
}

/// JSON text with the same characters as `escapeForTerminal` written as `\uXXXX` (UTF-16
/// units): the same JSON value, nothing hidden from a terminal that shows it.
#[napi(catch_unwind)]
pub fn escape_json_text(json: String) -> String {
    envelope::escape_json_text(&json)
}
