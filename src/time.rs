//! Time in c2c's unit: epoch seconds as `f64` (c2c writes `ts`, `registered_at`,
//! `created_at`, `expires_at` this way). JS gets the same float seconds; the plugin converts
//! OpenCode's epoch milliseconds where it meets them.

use std::time::{SystemTime, UNIX_EPOCH};

/// Now, in epoch seconds (fractional).
pub fn now_secs() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// Now, in whole epoch milliseconds (OpenCode's unit, the turn index's `EpochMs`).
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn now_is_in_seconds() {
        let now = now_secs();
        assert!(now > 1.7e9 && now < 1e10, "seconds, not ms: {now}");
    }
}
