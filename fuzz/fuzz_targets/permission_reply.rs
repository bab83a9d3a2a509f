//! The permission-reply parser: never panics, is deterministic, and only recognises
//! `permission:<id>:<verdict>` with a well-formed id.
#![no_main]

use c2c_bridge::envelope::parse_permission_reply;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(body) = std::str::from_utf8(data) else {
        return;
    };
    let got = parse_permission_reply(body);
    assert_eq!(format!("{got:?}"), format!("{:?}", parse_permission_reply(body)));
    if let Some(r) = got {
        assert!(!r.perm_id.is_empty() && r.perm_id.len() <= 128);
        assert!(r
            .perm_id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'));
        assert!(body.trim().starts_with("permission:"));
        assert!(body.contains(&r.perm_id));
    }
});
