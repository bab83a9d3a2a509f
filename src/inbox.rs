//! Messages as c2c stores them in `<session_id>.inbox.json` and `archive/<session_id>.jsonl`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One message, in c2c 0.8's field names. `via` and `from_session_id` are our extras (c2c
/// ignores them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// The sender's alias.
    pub from_alias: String,
    /// The recipient's alias; `"<alias>#<room_id>"` for a room message.
    pub to_alias: String,
    /// The text, untrusted.
    pub content: String,
    /// Epoch seconds (float) when it was enqueued.
    #[serde(default)]
    pub ts: f64,
    /// A uuid v4, unique per message; the dedup key for at-least-once delivery.
    pub message_id: String,
    /// c2c's deferrable flag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deferrable: Option<bool>,
    /// c2c's ephemeral flag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ephemeral: Option<bool>,
    /// Our extra: the sender's session id (for receipts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_session_id: Option<String>,
    /// Our extra: the session ids this message (or the chain of turns that produced it) has
    /// passed through, oldest first; the hop limit counts them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub via: Vec<String>,
    /// Our extra: true for a broadcast copy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub broadcast: Option<bool>,
    /// Our extra: true when a human released this message from the held inbox.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub released: Option<bool>,
    /// Our extra: set on a receipt notice (`from_alias = "c2c-system"`) telling a sender what
    /// became of one of its messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receipt: Option<crate::receipts::Receipt>,
    /// Every other field, kept.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Message {
    /// Parse one raw inbox record; `None` for a record of another shape.
    pub fn from_value(v: &Value) -> Option<Message> {
        // Deserialize from the borrowed value: no clone of the record.
        serde::Deserialize::deserialize(v).ok()
    }

    /// The record as JSON, keeping `extra`.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// The room id when this is a room message (`to_alias = "<alias>#<room_id>"`).
    pub fn room_id(&self) -> Option<&str> {
        self.to_alias.split_once('#').map(|(_, r)| r)
    }
}

/// A raw inbox record as it is written to `archive/<session_id>.jsonl`: c2c's archive fields
/// `drained_at` (epoch seconds), `drained_by` (who took it, e.g. `c2c-bridge:ack`) and
/// `session_id` (whose inbox it left) added to the record, unknown fields kept.
pub fn archived(mut record: Value, now: f64, drained_by: &str, session_id: &str) -> Value {
    if let Value::Object(o) = &mut record {
        o.insert("drained_at".into(), Value::from(now));
        o.insert("drained_by".into(), Value::from(drained_by));
        o.insert("session_id".into(), Value::from(session_id));
    }
    record
}

/// The `message_id` of a raw record, if it has one.
pub fn raw_message_id(v: &Value) -> Option<&str> {
    v.get("message_id").and_then(Value::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c2c_record_roundtrips_with_unknown_fields() {
        let raw = serde_json::json!({
            "from_alias": "a", "to_alias": "b#room1", "content": "hi", "ts": 1.25,
            "message_id": "m1", "reply_via": "x", "deferrable": true
        });
        let m = Message::from_value(&raw).unwrap();
        assert_eq!(m.room_id(), Some("room1"));
        assert_eq!(m.extra["reply_via"], "x");
        assert_eq!(m.to_value(), raw);
    }
}
