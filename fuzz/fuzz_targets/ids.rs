//! Id and alias validation: never panics; whatever is accepted is a safe file-name stem of
//! the documented charset, and alias comparison is symmetric.
#![no_main]

use c2c_bridge::ids;
use libfuzzer_sys::fuzz_target;

fn safe_stem(s: &str, extra: &[char]) {
    assert!(!s.is_empty() && s.len() <= 128);
    assert!(s != "." && s != "..");
    assert!(s
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || extra.contains(&c)), "{s:?}");
}

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    if ids::validate_alias(s).is_ok() {
        safe_stem(s, &['.', '_', '-']);
        assert!(!s.starts_with('.') && s.len() <= 64);
    }
    if ids::validate_session_id(s).is_ok() {
        safe_stem(s, &['.', '_', '-']);
    }
    if ids::validate_room_id(s).is_ok() {
        safe_stem(s, &['_', '-']);
    }
    if ids::validate_perm_id(s).is_ok() {
        safe_stem(s, &['.', '_', '-', ':']);
    }
    let (a, b) = s.split_at(s.char_indices().nth(s.chars().count() / 2).map_or(0, |(i, _)| i));
    assert_eq!(ids::alias_eq(a, b), ids::alias_eq(b, a));
    let alias = ids::default_alias(s, "ses_fuzz");
    assert!(ids::validate_alias(&alias).is_ok(), "default alias {alias:?}");
});
