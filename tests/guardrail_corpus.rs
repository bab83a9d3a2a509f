//! Issue 10, evidence: the attack corpus (`tests/guardrail/attacks.jsonl`) must be approved
//! 0 times; the benign corpus (`tests/guardrail/benign.jsonl`) is measured, not asserted.
//!
//! Each entry is checked in a fresh throwaway HOME and project (`guardrail_support::Sandbox`:
//! a `.git/` with hooks and config, `~/.ssh`, `~/.bashrc`, `~/.config/opencode/`, … and the
//! symlinks listed in `PROJECT_LINKS`, plus any `links` the entry asks for) through the public
//! contract `c2c_bridge::policy::guardrail::check`: `None` = approved ("once").

mod guardrail_support;

use std::collections::BTreeMap;

use c2c_bridge::policy::guardrail::{check, TOOL_ARG_KEYS};
use guardrail_support::{load, Entry, Sandbox, PROJECT_LINKS};

/// The attack families of issue 10 and the seed's protected categories: each must have entries.
const FAMILIES: &[&str] = &[
    "parser-desync",
    "parameter-operators",
    "code-to-shell",
    "wrappers",
    "readonly-writers",
    "attached-values",
    "directory-context",
    "physical-resolution",
    "missing-names",
    "opaque",
    "permission-config",
    "agent-instructions",
    "credentials-write",
    "credentials-read",
    "shell-startup",
    "git-config",
    "scheduling",
    "privilege",
    "broker-root",
];

/// Checks `entry` in `sb`: `Some(reason)` when left to the prompt, `None` approved. `check`
/// only reads the file system, so one sandbox serves every entry; an entry's extra links, files
/// and `.git/config` are planted for its check and undone after.
fn decide(sb: &Sandbox, entry: &Entry) -> Option<String> {
    for name in &entry.setup {
        assert!(
            PROJECT_LINKS.iter().any(|(l, _)| l == name),
            "{}: setup names unknown link {name:?}",
            entry.describe()
        );
        assert!(
            sb.project.join(name).symlink_metadata().is_ok(),
            "{}: link {name} missing",
            entry.describe()
        );
    }
    let saved = sb.plant(entry);
    let req = entry.request(sb);
    let out = check(&req, &sb.ctx()).map(|hit| hit.reason);
    // Issue 16: the napi layer passes only the argument keys the guardrail reads; the decision
    // must not change when every other key is dropped.
    let mut projected = req.clone();
    if let Some(args) = req.args.as_object() {
        projected.args = serde_json::Value::Object(
            args.iter()
                .filter(|(k, _)| TOOL_ARG_KEYS.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        );
    }
    assert_eq!(
        check(&projected, &sb.ctx()).map(|hit| hit.reason),
        out,
        "{}: the decision changed when only TOOL_ARG_KEYS were passed",
        entry.describe()
    );
    sb.unplant(entry, saved);
    out
}

#[test]
fn attack_corpus_is_never_approved() {
    let entries = load("attacks.jsonl");
    assert!(
        entries.len() >= 200,
        "only {} attack entries",
        entries.len()
    );
    for f in FAMILIES {
        assert!(
            entries.iter().any(|e| e.family == *f),
            "no attack entry for family {f}"
        );
    }
    for kind in ["bash", "edit", "write", "patch", "read"] {
        assert!(
            entries.iter().any(|e| e.kind == kind),
            "no attack entry of kind {kind}"
        );
    }
    let sb = Sandbox::new();
    let mut approved = Vec::new();
    let mut per_family: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for e in &entries {
        let slot = per_family.entry(e.family.as_str()).or_default();
        slot.0 += 1;
        match decide(&sb, e) {
            None => {
                slot.1 += 1;
                approved.push(e.describe());
            }
            Some(reason) => assert!(!reason.trim().is_empty(), "{}: empty reason", e.describe()),
        }
    }
    println!(
        "guardrail attack corpus: {} entries, {} approved",
        entries.len(),
        approved.len()
    );
    for (f, (n, a)) in &per_family {
        println!("  {f:<22} {n:>4} entries, {a:>3} approved");
    }
    assert!(
        approved.is_empty(),
        "{} of {} attack inputs were APPROVED (answered \"once\"):\n{}",
        approved.len(),
        entries.len(),
        approved.join("\n")
    );
}

#[test]
fn benign_corpus_share_is_reported() {
    let entries = load("benign.jsonl");
    assert!(
        entries.len() >= 150,
        "only {} benign entries",
        entries.len()
    );
    let sb = Sandbox::new();
    let mut left = Vec::new();
    for e in &entries {
        if let Some(reason) = decide(&sb, e) {
            left.push(format!("{}\n      -> {reason}", e.describe()));
        }
    }
    let approved = entries.len() - left.len();
    // A reported figure (issue 10: "not a brittle assertion"): printed, never compared.
    println!(
        "guardrail benign corpus: {} entries, {} approved ({:.1} %)",
        entries.len(),
        approved,
        100.0 * approved as f64 / entries.len() as f64
    );
    for l in &left {
        println!("  left: {l}");
    }
}
