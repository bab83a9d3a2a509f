//! A borrowed view of one pending record: the fields the write path's rules read (perm id,
//! requester alias, expiry), parsed without copying strings or collecting unknown fields.
//! It accepts exactly the records [`PendingSlot::from_value`] accepts (the same fields with
//! the same types; other fields are allowed and ignored, as the full parse keeps them in
//! `extra`), so the rules see the same slots at a fraction of the cost: `openPendingReply`
//! applies them to every record of the file.

use std::borrow::Cow;

use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::Value;

#[cfg(test)]
use super::PendingSlot;

/// The view; `None` from [`SlotView::of`] for a record of another shape.
#[derive(Debug, Deserialize)]
pub(crate) struct SlotView<'a> {
    #[serde(borrow)]
    pub(crate) perm_id: Cow<'a, str>,
    #[serde(borrow)]
    #[allow(dead_code)] // checked for shape only
    kind: Cow<'a, str>,
    #[serde(borrow)]
    #[allow(dead_code)]
    requester_session_id: Cow<'a, str>,
    #[serde(borrow)]
    pub(crate) requester_alias: Cow<'a, str>,
    #[allow(dead_code)]
    supervisors: Vec<IgnoredString>,
    #[allow(dead_code)]
    created_at: f64,
    pub(crate) expires_at: f64,
    #[serde(default)]
    #[allow(dead_code)]
    fallthrough_fired_at: Vec<IgnoredAny>,
    #[serde(default)]
    #[allow(dead_code)]
    resolved_at: Option<f64>,
    #[serde(default)]
    #[allow(dead_code)]
    verdict: Option<IgnoredString>,
}

/// A string, not kept (the full parse requires strings there).
#[derive(Debug)]
struct IgnoredString;

impl<'de> Deserialize<'de> for IgnoredString {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = IgnoredString;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<IgnoredString, E> {
                Ok(IgnoredString)
            }
        }
        d.deserialize_str(V)
    }
}

impl<'a> SlotView<'a> {
    /// View one raw record; `None` for a record of another shape.
    pub(crate) fn of(v: &'a Value) -> Option<SlotView<'a>> {
        SlotView::deserialize(v).ok()
    }

    /// Active at `now` (epoch seconds), as [`super::PendingSlot::is_active`].
    pub(crate) fn is_active(&self, now: f64) -> bool {
        self.expires_at > now
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_view_accepts_exactly_what_the_full_parse_accepts() {
        let good = json!({"perm_id": "p", "kind": "permission", "requester_session_id": "s",
            "requester_alias": "A", "supervisors": ["b"], "created_at": 1, "expires_at": 2.5,
            "fallthrough_fired_at": [1, "x"], "resolved_at": null, "verdict": null, "more": {}});
        let mut cases = vec![good.clone(), json!(42), json!(null), json!([]), json!({})];
        for (k, bad) in [
            ("perm_id", json!(1)),
            ("kind", json!(null)),
            ("requester_session_id", json!([])),
            ("requester_alias", json!(2)),
            ("supervisors", json!("b")),
            ("supervisors", json!([1])),
            ("created_at", json!("1")),
            ("expires_at", json!(null)),
            ("fallthrough_fired_at", json!(null)),
            ("fallthrough_fired_at", json!({})),
            ("resolved_at", json!("t")),
            ("verdict", json!(3)),
            ("verdict", json!("approve")),
            ("resolved_at", json!(7)),
        ] {
            let mut v = good.clone();
            v[k] = bad;
            cases.push(v);
        }
        for k in crate::pending::C2C_SLOT_FIELDS {
            let mut v = good.clone();
            v.as_object_mut().unwrap().remove(k);
            cases.push(v);
        }
        for v in &cases {
            let full = PendingSlot::from_value(v);
            let view = SlotView::of(v);
            assert_eq!(full.is_some(), view.is_some(), "{v}");
            if let (Some(f), Some(w)) = (full, view) {
                assert_eq!(
                    (f.perm_id.as_str(), f.requester_alias.as_str(), f.expires_at),
                    (&*w.perm_id, &*w.requester_alias, w.expires_at)
                );
            }
        }
    }
}
