//! What of an OpenCode event the decoder reads: [`EVENT_FIELDS`], a tree of the keys
//! [`super::decode_event`] looks at. The napi layer copies only these out of JavaScript (a
//! streaming text part's `text`, an edit's `diff`, a tool call's file content are never
//! converted); [`project`] is the same copy on a `serde_json::Value`, the reference the tests
//! hold the decoder to: `decode_event(project(e, EVENT_FIELDS)) == decode_event(e)`.

use serde_json::{Map, Value};

use crate::policy::guardrail::TOOL_ARG_KEYS;

/// How one field is copied.
#[derive(Debug, Clone, Copy)]
pub enum Field {
    /// A primitive (string, number, boolean, null) as it is; an object or array becomes `{}`
    /// (the decoder only asks such a field "is it a string / number / `true` / non-null?",
    /// and `{}` answers like the original).
    Scalar,
    /// The value as it is, however deep (small fields only).
    Whole,
    /// A plain object: only the listed keys (each copied as its own [`Field`]); anything else
    /// becomes `null` (the decoder reads nothing from a non-object).
    Keys(&'static [(&'static str, Field)]),
    /// A plain object: only the listed keys, each [`Field::Whole`]; anything else `null`.
    KeysWhole(&'static [&'static str]),
}

use Field::*;

const MESSAGE_TIME: &[(&str, Field)] = &[("created", Scalar), ("completed", Scalar)];
/// `info` of `message.updated` (message) and `session.*` (session: `id`, `parentID`).
const INFO: &[(&str, Field)] = &[
    ("id", Scalar),
    ("sessionID", Scalar),
    ("role", Scalar),
    ("parentID", Scalar),
    ("time", Keys(MESSAGE_TIME)),
    ("finish", Scalar),
    ("error", Scalar),
    ("summary", Scalar),
];
const PEER_MESSAGE: &[(&str, Field)] = &[("messageId", Scalar), ("from", Scalar), ("via", Whole)];
const PART_METADATA: &[(&str, Field)] = &[
    ("compaction_continue", Scalar),
    ("peerMessage", Keys(PEER_MESSAGE)),
];
const STATE_TIME: &[(&str, Field)] = &[("start", Scalar), ("end", Scalar)];
const STATE: &[(&str, Field)] = &[
    ("status", Scalar),
    ("input", KeysWhole(TOOL_ARG_KEYS)),
    ("metadata", Keys(&[("sessionId", Scalar)])),
    ("time", Keys(STATE_TIME)),
];
const PART: &[(&str, Field)] = &[
    ("messageID", Scalar),
    ("sessionID", Scalar),
    ("type", Scalar),
    ("synthetic", Scalar),
    ("metadata", Keys(PART_METADATA)),
    ("auto", Scalar),
    ("callID", Scalar),
    ("tool", Scalar),
    ("state", Keys(STATE)),
];
const PROPERTIES: &[(&str, Field)] = &[
    ("info", Keys(INFO)),
    ("part", Keys(PART)),
    ("sessionID", Scalar),
    ("status", Keys(&[("type", Scalar)])),
];

/// Every field of an event `{type, properties}` that [`super::decode_event`] reads, for all
/// event types at once (OpenCode 1.18.33 shapes, see the module doc of [`super`]).
pub const EVENT_FIELDS: Field = Keys(&[("type", Scalar), ("properties", Keys(PROPERTIES))]);

/// The tool-part input the decoder keeps ([`super::ToolPart::input`]): only the guardrail's
/// [`TOOL_ARG_KEYS`].
pub(super) const TOOL_INPUT_FIELDS: Field = KeysWhole(TOOL_ARG_KEYS);

/// `v` copied as `field` says (see [`Field`]).
pub fn project(v: &Value, field: Field) -> Value {
    match field {
        Whole => v.clone(),
        Scalar => match v {
            Value::Object(_) | Value::Array(_) => Value::Object(Map::new()),
            _ => v.clone(),
        },
        Keys(keys) => match v.as_object() {
            Some(o) => Value::Object(
                keys.iter()
                    .filter_map(|(k, f)| o.get(*k).map(|x| (k.to_string(), project(x, *f))))
                    .collect(),
            ),
            None => Value::Null,
        },
        KeysWhole(keys) => match v.as_object() {
            Some(o) => Value::Object(
                keys.iter()
                    .filter_map(|k| o.get(*k).map(|x| (k.to_string(), x.clone())))
                    .collect(),
            ),
            None => Value::Null,
        },
    }
}
