//! Prints the guardrail corpus figures for SECURITY.md and bench/RESULTS.md (issue 10):
//!
//! ```text
//! cargo run --example guardrail_corpus
//! Guardrail corpus: N attacks, A approved; M benign, K approved (P %)
//! ```
//!
//! Every entry of `tests/guardrail/attacks.jsonl` and `tests/guardrail/benign.jsonl` is checked
//! in a throwaway HOME and project, exactly as `tests/guardrail_corpus.rs` does; `--list` also
//! prints each approved attack and each benign entry left to the prompt, with the reason.

#[path = "../tests/guardrail_support/mod.rs"]
mod guardrail_support;

use c2c_bridge::policy::guardrail::check;
use guardrail_support::{load, Entry, Sandbox};

fn decide(sb: &Sandbox, e: &Entry) -> Option<String> {
    let saved = sb.plant(e);
    let out = check(&e.request(sb), &sb.ctx()).map(|h| h.reason);
    sb.unplant(e, saved);
    out
}

fn main() {
    let list = std::env::args().any(|a| a == "--list");
    let sb = Sandbox::new();
    let attacks = load("attacks.jsonl");
    let benign = load("benign.jsonl");
    let mut attacks_approved = 0;
    for e in &attacks {
        if decide(&sb, e).is_none() {
            attacks_approved += 1;
            if list {
                println!("approved attack: {}", e.describe());
            }
        }
    }
    let mut benign_approved = 0;
    for e in &benign {
        match decide(&sb, e) {
            None => benign_approved += 1,
            Some(reason) if list => println!("benign left: {} -> {reason}", e.describe()),
            Some(_) => {}
        }
    }
    println!(
        "Guardrail corpus: {} attacks, {} approved; {} benign, {} approved ({:.1} %)",
        attacks.len(),
        attacks_approved,
        benign.len(),
        benign_approved,
        100.0 * benign_approved as f64 / benign.len() as f64
    );
}
