//! Reading OpenCode's JSON values: the few conversions every decoder shares.

use serde_json::Value;

use crate::provenance::EpochMs;

/// `v[key]` as a non-empty string.
pub(super) fn s<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str).filter(|s| !s.is_empty())
}

/// `v[key]` as an owned non-empty string.
pub(super) fn owned(v: &Value, key: &str) -> Option<String> {
    s(v, key).map(str::to_string)
}

/// An epoch-ms time. JS numbers past 2^31 cross napi as `f64`, so both forms are accepted
/// (a float must be finite and below 9e15 ms, about year 287 000).
pub(super) fn ms(v: Option<&Value>) -> Option<EpochMs> {
    let v = v?;
    v.as_i64().or_else(|| {
        v.as_f64()
            .filter(|f| f.is_finite() && f.abs() < 9.0e15)
            .map(|f| f as EpochMs)
    })
}

/// The strings of an array (other elements skipped); empty when `v` is not an array.
pub(super) fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}
