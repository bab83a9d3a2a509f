//! The envelope: whatever the peer-controlled fields hold, a frame is exactly one frame, every
//! body line sits behind the gutter (or is a line we own), and no raw control, format or
//! line-separator character reaches the output.
#![no_main]

use c2c_bridge::envelope::{self, Kind, PeerText, CONTINUATION_GUTTER, FRAME_PREFIX, GUTTER};
use libfuzzer_sys::fuzz_target;

const KEYS: &[&str] = &[
    "notice: ",
    "from: ",
    "to: ",
    "via: ",
    "message-id: ",
    "title: ",
    "note: ",
    "- ",
    "  ",
    "(no entries)",
    GUTTER,
    CONTINUATION_GUTTER,
];

fn check(out: &str) {
    assert!(out.ends_with('\n'));
    let lines: Vec<&str> = out[..out.len() - 1].split('\n').collect();
    let frames = lines.iter().filter(|l| l.starts_with(FRAME_PREFIX)).count();
    assert_eq!(frames, 2, "{out}");
    assert!(lines[0].contains(" BEGIN "));
    assert_eq!(lines[0].replace(" BEGIN ", " END "), lines[lines.len() - 1]);
    for l in &lines[1..lines.len() - 1] {
        assert!(KEYS.iter().any(|k| l.starts_with(k)), "line not ours: {l:?}");
    }
    for c in out.chars() {
        // A tab is kept on purpose (it cannot end a line); every other control is escaped.
        let bad = (c.is_control() && c != '\n' && c != '\t')
            || matches!(c, '\u{2028}' | '\u{2029}' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{feff}');
        assert!(!bad, "raw {c:?} in output");
    }
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut parts = text.splitn(5, '\u{0}');
    let alias = parts.next().unwrap_or("");
    let body = parts.next().unwrap_or("");
    let id = parts.next().unwrap_or("");
    let room = parts.next();
    let via: Vec<String> = parts
        .next()
        .map(|v| v.split(',').map(str::to_string).collect())
        .unwrap_or_default();
    let kind = match (room, data.first().map(|b| b % 3)) {
        (Some(r), _) => Kind::Room { room_id: r },
        (None, Some(1)) => Kind::Broadcast,
        _ => Kind::Direct,
    };
    let m = PeerText {
        from_alias: alias,
        body,
        message_id: id,
        via: &via,
        kind,
        repaired: data.len() % 2 == 0,
    };
    let out = envelope::frame_message(&m);
    check(&out);
    assert_eq!(out, envelope::frame_message(&m), "deterministic");
    check(&envelope::frame_notice(alias, &[(id, body), ("k", alias)]));
});
