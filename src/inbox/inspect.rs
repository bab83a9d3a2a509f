//! Read-only inspection of a root's inboxes for `c2c-bridge doctor`: what each
//! `<session_id>.inbox.json` holds (the dead letter's count is [`super::dead_letter::count`]).
//! Nothing is locked, moved, repaired or copied aside (a file that is not a JSON array is reported,
//! not quarantined: that is the next writer's job).

use serde_json::Value;

use super::{parse, Summary};
use crate::error::{Error, Result};
use crate::store::{self, BrokerRoot};

/// One inbox file of a root, as `doctor` reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct InboxFile {
    /// The session id the file name carries (`<session_id>.inbox.json`; not validated here).
    pub session_id: String,
    /// The file's size in bytes (0 when it is not a regular file).
    pub bytes: u64,
    /// What it holds, record by record; `Err` with a one-line reason when it cannot be read
    /// as an inbox: `symlink (never followed)`, `not a regular file`, `not a JSON array`,
    /// `unreadable: <parser's complaint>`, or an invalid session id in its name.
    pub summary: std::result::Result<Summary, String>,
}

/// Every `*.inbox.json` of `root`, sorted by file name, each summarised as the broker would
/// read it ([`super::summarize`]), without following a symlink and without side effects.
///
/// # Errors
/// [`Error::Io`] when the root cannot be listed.
pub fn inspect_inboxes(root: &BrokerRoot) -> Result<Vec<InboxFile>> {
    let entries = std::fs::read_dir(root.path()).map_err(|e| Error::io(root.path(), e))?;
    let mut names: Vec<String> = entries
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".inbox.json"))
        .collect();
    names.sort();
    Ok(names
        .into_iter()
        .map(|name| {
            let session_id = name[..name.len() - ".inbox.json".len()].to_string();
            let (bytes, summary) = inspect_one(root, &session_id);
            InboxFile {
                session_id,
                bytes,
                summary,
            }
        })
        .collect())
}

fn inspect_one(root: &BrokerRoot, session_id: &str) -> (u64, std::result::Result<Summary, String>) {
    if let Err(e) = crate::ids::validate_session_id(session_id) {
        return (0, Err(e.to_string()));
    }
    let path = root.inbox(session_id);
    match std::fs::symlink_metadata(&path) {
        Ok(m) if m.file_type().is_symlink() => return (0, Err("symlink (never followed)".into())),
        Ok(m) if !m.is_file() => return (0, Err("not a regular file".into())),
        Ok(_) => {}
        Err(e) => return (0, Err(format!("unreadable: {e}"))),
    }
    let (meta, bytes) = match store::file::read_bytes(&path) {
        Ok(Some(x)) => x,
        Ok(None) => return (0, Err("unreadable: it vanished while being read".into())),
        Err(e) => return (0, Err(format!("unreadable: {e}"))),
    };
    let size = meta.len();
    // Only an array (or bytes shaped as one, with bad records inside) is parsed: anything else
    // would be copied aside as corrupt by the parser, and doctor changes nothing.
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Array(_)) => {}
        Ok(_) => return (size, Err("not a JSON array".into())),
        Err(e) if store::records::split_array(&bytes).is_none() => {
            return (size, Err(format!("unreadable: {e}")))
        }
        Err(_) => {}
    }
    let summary = parse(&path, &bytes).map(|entries| super::summary_of(&entries));
    (size, summary.map_err(|e| format!("unreadable: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::root::RootSource;

    #[test]
    fn inboxes_are_summarised_and_bad_files_reported_without_side_effects() {
        let dir = crate::testutil::private_tempdir();
        let root = BrokerRoot::open(dir.path(), RootSource::Explicit).unwrap();
        let p = dir.path();
        std::fs::write(
            p.join("s-a.inbox.json"),
            r#"[{"from_alias":"x","to_alias":"a","content":"hi","ts":1.0,"message_id":"m1"},
                {"from_alias":"x","to_alias":"a#r","content":"room","ts":2.0},
                {"kind":"other"}]"#,
        )
        .unwrap();
        std::fs::write(p.join("s-b.inbox.json"), "garbage").unwrap();
        std::fs::write(p.join("s-c.inbox.json"), "{}").unwrap();
        std::os::unix::fs::symlink(p.join("s-a.inbox.json"), p.join("s-d.inbox.json")).unwrap();
        std::fs::write(p.join("bad id.inbox.json"), "[]").unwrap();
        let before = std::fs::read_dir(p).unwrap().count();

        let got = inspect_inboxes(&root).unwrap();
        let ids: Vec<&str> = got.iter().map(|f| f.session_id.as_str()).collect();
        assert_eq!(ids, vec!["bad id", "s-a", "s-b", "s-c", "s-d"]);
        assert!(got[0].summary.as_ref().unwrap_err().contains("session id"));
        let a = got[1].summary.as_ref().unwrap();
        assert_eq!((a.messages, a.derived_ids, a.not_messages.len()), (2, 1, 1));
        assert!(got[1].bytes > 0);
        assert!(got[2]
            .summary
            .as_ref()
            .unwrap_err()
            .starts_with("unreadable: "));
        assert_eq!(got[3].summary, Err("not a JSON array".into()));
        assert_eq!(got[4].summary, Err("symlink (never followed)".into()));
        // nothing copied aside, nothing moved
        assert_eq!(std::fs::read_dir(p).unwrap().count(), before);
        assert_eq!(
            std::fs::read_to_string(p.join("s-b.inbox.json")).unwrap(),
            "garbage"
        );
    }
}
